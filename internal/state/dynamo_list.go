package state

import (
	"context"
	"errors"
	"fmt"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
)

// tableLister is the call ListTables makes. It is not part of DynamoAPI:
// only the poller lists tables (to name those like a missing state table),
// and the function's role does not allow it.
type tableLister interface {
	ListTables(ctx context.Context, in *dynamodb.ListTablesInput, optFns ...func(*dynamodb.Options)) (*dynamodb.ListTablesOutput, error)
}

// ListTables returns the names of the account's tables in the client's
// region, at most limit of them (a page holds up to 100).
func (d *Dynamo) ListTables(ctx context.Context, limit int) ([]string, error) {
	l, ok := d.client.(tableLister)
	if !ok {
		return nil, errors.New("state: this DynamoDB client cannot list tables")
	}
	var names []string
	in := &dynamodb.ListTablesInput{}
	for len(names) < limit {
		out, err := l.ListTables(ctx, in)
		if err != nil {
			return names, fmt.Errorf("state: list tables: %w", err)
		}
		names = append(names, out.TableNames...)
		if out.LastEvaluatedTableName == nil {
			break
		}
		in = &dynamodb.ListTablesInput{ExclusiveStartTableName: aws.String(*out.LastEvaluatedTableName)}
	}
	return names[:min(len(names), limit)], nil
}
