package ops

import (
	"context"
	"errors"
	"log/slog"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/secretsmanager"

	"github.com/iggy-s3-sink/iggy-s3-sink/internal/app"
	"github.com/iggy-s3-sink/iggy-s3-sink/internal/fanout"
	"github.com/iggy-s3-sink/iggy-s3-sink/internal/iggy/iggytest"
	"github.com/iggy-s3-sink/iggy-s3-sink/internal/source"
)

// TestRefusedLoginNamesTheSettings: a wrong Iggy password or token fails
// every path that logs in — the check, the audit, the status, and a run
// as the Lambda's tick makes it (the poller's once and run too) — with an
// error that names the settings holding the credentials: the
// configuration's, or the Secrets Manager secret they came from. The
// password and the token never appear. On each protocol the broker speaks.
func TestRefusedLoginNamesTheSettings(t *testing.T) {
	s := startServers(t)
	t.Setenv("AWS_ENDPOINT_URL_SECRETS_MANAGER", s.moto.Endpoint)
	sm := secretsmanager.New(secretsmanager.Options{Region: "us-east-1", BaseEndpoint: aws.String(s.moto.Endpoint),
		Credentials: credentials.NewStaticCredentialsProvider("moto", "moto-secret", "")})
	for name, value := range map[string]string{
		"iggy/json":  `{"username":"iggy","password":"wrong-in-secret-31"}`,
		"iggy/plain": "wrong-plain-secret-32",
		"iggy/token": `{"token":"wrong-token-in-secret-33"}`,
	} {
		if _, err := sm.CreateSecret(context.Background(), &secretsmanager.CreateSecretInput{Name: aws.String(name), SecretString: aws.String(value)}); err != nil {
			t.Fatal(err)
		}
	}
	secrets := []string{"not-the-password-77", "wrong-token-78", "wrong-in-secret-31", "wrong-plain-secret-32", "wrong-token-in-secret-33"}
	cases := []struct {
		name  string
		edits map[string]string
		want  []string
	}{
		{"password", map[string]string{"IGGY_PASSWORD": "not-the-password-77"},
			[]string{`user "iggy"`, "iggy.username / iggy.password (IGGY_USERNAME / IGGY_PASSWORD)"}},
		{"token", map[string]string{"IGGY_TOKEN": "wrong-token-78"},
			[]string{"a personal access token", "iggy.token (IGGY_TOKEN)"}},
		{"secret with username and password", map[string]string{"IGGY_CREDENTIALS_SECRET": "iggy/json"},
			[]string{`"username" and "password" in Secrets Manager secret "iggy/json" (iggy.credentials_secret / IGGY_CREDENTIALS_SECRET)`}},
		{"secret holding the password alone", map[string]string{"IGGY_CREDENTIALS_SECRET": "iggy/plain"},
			[]string{`the password in Secrets Manager secret "iggy/plain" (iggy.credentials_secret / IGGY_CREDENTIALS_SECRET)`, "iggy.username (IGGY_USERNAME)"}},
		{"secret with a token", map[string]string{"IGGY_CREDENTIALS_SECRET": "iggy/token"},
			[]string{`"token" in Secrets Manager secret "iggy/token"`}},
	}
	for _, protocol := range []string{iggytest.Protocol08, iggytest.Protocol09, iggytest.Protocol010} {
		b, err := iggytest.Start(iggytest.WithProtocol(protocol), iggytest.WithLogger(slog.New(slog.DiscardHandler)))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { b.Close() })
		if err := b.Seed("app", "logs", 1, 3); err != nil {
			t.Fatal(err)
		}
		for _, tc := range cases {
			t.Run(protocol+"/"+tc.name, func(t *testing.T) {
				env := map[string]string{"IGGY_ADDRESS": b.Addr()}
				for k, v := range tc.edits {
					env[k] = v
				}
				sink := s.sink(t, env, app.Options{Logger: slog.New(slog.DiscardHandler)})
				ctx := context.Background()
				checkErr := NewChecker(sink).Check(ctx, func(CheckResult) {})
				_, auditErr := NewAuditor(sink, slog.New(slog.DiscardHandler)).Audit(ctx, AuditOptions{})
				_, statusErr := Status(ctx, sink)
				res, tickErr := sink.Coordinator().Tick(ctx, fanout.TickOptions{})
				if tickErr == nil && res != nil && res.Summary != nil {
					t.Fatalf("the tick drained with a wrong login: %+v", res.Summary)
				}
				for what, err := range map[string]error{"check": checkErr, "audit": auditErr, "status": statusErr, "tick": tickErr} {
					if !errors.Is(err, source.ErrLoginRefused) {
						t.Fatalf("%s: %v, want ErrLoginRefused", what, err)
					}
					for _, want := range tc.want {
						if !strings.Contains(err.Error(), want) {
							t.Errorf("%s: %q lacks %q", what, err, want)
						}
					}
					for _, secret := range secrets {
						if strings.Contains(err.Error(), secret) {
							t.Errorf("%s: %q shows a secret", what, err)
						}
					}
				}
			})
		}
	}
}

// sink builds a sink from the servers' configuration with edits.
func (s *servers) sink(t *testing.T, edits map[string]string, opts app.Options) *app.Sink {
	t.Helper()
	env := map[string]string{}
	for k, v := range s.cfg {
		env[k] = v
	}
	for k, v := range edits {
		env[k] = v
	}
	sink, err := app.New(context.Background(), loadEnv(t, env), opts)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	return sink
}
