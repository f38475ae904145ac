package explain

import (
	"strings"
	"testing"
)

func TestIsAWSEndpoint(t *testing.T) {
	for endpoint, want := range map[string]bool{
		"": true,
		"https://dynamodb.us-east-1.amazonaws.com":                    true,
		"http://dynamodb.us-east-1.amazonaws.com":                     true,
		"https://dynamodb-fips.us-gov-west-1.amazonaws.com":           true,
		"https://vpce-0a1b-xyz.dynamodb.eu-west-1.vpce.amazonaws.com": true,
		"https://dynamodb.cn-north-1.amazonaws.com.cn":                true,
		"https://dynamodb.us-east-1.api.aws":                          true,
		"https://DynamoDB.US-EAST-1.AmazonAWS.com.":                   true,
		"::not a url":                      true,
		"http://127.0.0.1:8000":            false,
		"http://localhost:4566":            false,
		"http://dynamodb-local:8000":       false,
		"http://amazonaws.com.example.org": false,
		"http://notamazonaws.com":          false,
	} {
		if got := IsAWSEndpoint(endpoint); got != want {
			t.Errorf("IsAWSEndpoint(%q) = %v, want %v", endpoint, got, want)
		}
	}
}

func TestSimilarNames(t *testing.T) {
	names := []string{"sink-state", "Sink-Stat", "iggy-s3-sink-StateTable-1X2Y3Z", "orders", "sink-state-old", "a", "sink"}
	for _, tc := range []struct {
		name string
		want []string
	}{
		{"sink-stat", []string{"Sink-Stat", "sink-state", "sink-state-old"}},
		{"StateTable", []string{"iggy-s3-sink-StateTable-1X2Y3Z"}},
		{"orderz", []string{"orders"}},
		{"payments", nil},
	} {
		got := similarNames(tc.name, names, 3)
		if strings.Join(got, ",") != strings.Join(tc.want, ",") {
			t.Errorf("similarNames(%q) = %q, want %q", tc.name, got, tc.want)
		}
	}
}

// TestCredentialsFixNamesOnlySettings: the hint after a refused login for
// each way the credentials can come, never with a value.
func TestCredentialsFixNamesOnlySettings(t *testing.T) {
	for _, tc := range []struct {
		token bool
		gave  SecretFields
		want  string
	}{
		{false, SecretFields{}, "fix iggy.username / iggy.password (IGGY_USERNAME / IGGY_PASSWORD)"},
		{true, SecretFields{}, "fix the personal access token, iggy.token (IGGY_TOKEN)"},
		{false, SecretFields{ID: "s", Username: true, Password: true}, `fix "username" and "password" in Secrets Manager secret "s" (iggy.credentials_secret / IGGY_CREDENTIALS_SECRET)`},
		{false, SecretFields{ID: "s", Username: true}, `fix "username" in Secrets Manager secret "s" (iggy.credentials_secret / IGGY_CREDENTIALS_SECRET), or iggy.password (IGGY_PASSWORD)`},
		{false, SecretFields{ID: "s", Password: true}, `fix the password in Secrets Manager secret "s" (iggy.credentials_secret / IGGY_CREDENTIALS_SECRET), or iggy.username (IGGY_USERNAME)`},
		{true, SecretFields{ID: "s", Token: true}, `fix the personal access token, "token" in Secrets Manager secret "s" (iggy.credentials_secret / IGGY_CREDENTIALS_SECRET)`},
		// The secret gave an address only: the credentials are the configuration's.
		{false, SecretFields{ID: "s"}, "fix iggy.username / iggy.password (IGGY_USERNAME / IGGY_PASSWORD)"},
	} {
		e := &Explainer{Token: tc.token, Secret: tc.gave}
		if got := e.credentialsFix(); got != tc.want {
			t.Errorf("%+v from %+v:\n got %s\nwant %s", tc.token, tc.gave, got, tc.want)
		}
	}
}
