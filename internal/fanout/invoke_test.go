package fanout

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/lambda"
)

// TestLambdaInvoker checks the Invoke call a tick makes against a small
// stand-in for the Lambda API: asynchronous, to the function by name, with
// the payload as sent; and a refusal explains the missing permission.
func TestLambdaInvoker(t *testing.T) {
	var got struct {
		path, invocationType, body string
	}
	status, errType := http.StatusAccepted, ""
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		got.path, got.invocationType, got.body = r.URL.Path, r.Header.Get("X-Amz-Invocation-Type"), string(b)
		if errType != "" {
			w.Header().Set("X-Amzn-ErrorType", errType)
		}
		w.WriteHeader(status)
		if status >= 400 {
			io.WriteString(w, `{"Message":"User: arn:aws:sts::123:assumed-role/sink is not authorized to perform: lambda:InvokeFunction"}`)
		}
	}))
	defer srv.Close()
	client := lambda.New(lambda.Options{Region: "us-east-1", BaseEndpoint: aws.String(srv.URL),
		Credentials: credentials.NewStaticCredentialsProvider("k", "s", "")})
	inv := &LambdaInvoker{Client: client, Function: "iggy-sink"}
	if err := inv.Start(context.Background(), []byte(`{"mode":"worker"}`)); err != nil {
		t.Fatal(err)
	}
	if got.path != "/2015-03-31/functions/iggy-sink/invocations" || got.invocationType != "Event" || got.body != `{"mode":"worker"}` {
		t.Fatalf("invoke sent %+v", got)
	}
	status, errType = http.StatusForbidden, "AccessDeniedException"
	err := inv.Start(context.Background(), []byte(`{}`))
	if err == nil || !strings.Contains(err.Error(), "needs lambda:InvokeFunction on this function") || !strings.Contains(err.Error(), "MaxWorkers > 1") {
		t.Fatalf("refused invoke: %v", err)
	}
	status, errType = http.StatusOK, ""
	if err := inv.Start(context.Background(), []byte(`{}`)); err == nil || !strings.Contains(err.Error(), "status 200, want 202") {
		t.Fatalf("a synchronous answer: %v", err)
	}
}
