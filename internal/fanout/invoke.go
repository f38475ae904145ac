package fanout

import (
	"context"
	"errors"
	"fmt"
	"time"

	awsconfig "github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/lambda"
	"github.com/aws/aws-sdk-go-v2/service/lambda/types"
	"github.com/aws/smithy-go"
)

// LambdaAPI is the Lambda call an invoker makes.
type LambdaAPI interface {
	Invoke(ctx context.Context, in *lambda.InvokeInput, opts ...func(*lambda.Options)) (*lambda.InvokeOutput, error)
}

// LambdaInvoker starts invocations of one function asynchronously
// (InvocationType Event): Lambda queues the event and answers 202 at once.
type LambdaInvoker struct {
	Client   LambdaAPI
	Function string
	// Timeout bounds one Invoke call (default 10s).
	Timeout time.Duration
}

// NewLambdaInvoker invokes function in the process's own region
// (AWS_REGION), at AWS_ENDPOINT_URL_LAMBDA when that is set.
func NewLambdaInvoker(ctx context.Context, function string) (*LambdaInvoker, error) {
	if function == "" {
		return nil, errors.New("fan-out: no function name to invoke (AWS_LAMBDA_FUNCTION_NAME is empty)")
	}
	cfg, err := awsconfig.LoadDefaultConfig(ctx)
	if err != nil {
		return nil, fmt.Errorf("fan-out: aws configuration: %w", err)
	}
	return &LambdaInvoker{Client: lambda.NewFromConfig(cfg), Function: function}, nil
}

// Start implements Invoker.
func (l *LambdaInvoker) Start(ctx context.Context, payload []byte) error {
	timeout := l.Timeout
	if timeout <= 0 {
		timeout = 10 * time.Second
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	out, err := l.Client.Invoke(ctx, &lambda.InvokeInput{
		FunctionName: &l.Function, InvocationType: types.InvocationTypeEvent, Payload: payload,
	})
	var ae smithy.APIError
	switch {
	case errors.As(err, &ae) && ae.ErrorCode() == "AccessDeniedException":
		return fmt.Errorf("fan-out: invoke %s: access denied: the role needs lambda:InvokeFunction on this function (the template grants it when MaxWorkers > 1): %w", l.Function, err)
	case err != nil:
		return fmt.Errorf("fan-out: invoke %s: %w", l.Function, err)
	case out.StatusCode != 202:
		return fmt.Errorf("fan-out: invoke %s: status %d, want 202 (accepted for asynchronous invocation)", l.Function, out.StatusCode)
	}
	return nil
}
