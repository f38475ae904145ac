package gluelock_test

import (
	"context"
	"errors"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/glue"
	"github.com/aws/aws-sdk-go-v2/service/glue/types"

	"github.com/iggy-s3-sink/iggy-s3-sink/internal/testkit/gluelock"
	"github.com/iggy-s3-sink/iggy-s3-sink/internal/testkit/testenv"
)

// TestStaleUpdateRefused: of two updates naming the same version, the
// first applies and the second is refused as AWS Glue refuses it.
func TestStaleUpdateRefused(t *testing.T) {
	m := testenv.StartMoto(t)
	p := gluelock.Start(t, m.Endpoint)
	ctx := context.Background()
	c := glue.New(glue.Options{Region: "us-east-1", BaseEndpoint: aws.String(p.URL), Credentials: credentials.NewStaticCredentialsProvider("test", "test", "")})
	if _, err := c.CreateDatabase(ctx, &glue.CreateDatabaseInput{DatabaseInput: &types.DatabaseInput{Name: aws.String("db")}}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.CreateTable(ctx, &glue.CreateTableInput{DatabaseName: aws.String("db"), TableInput: &types.TableInput{Name: aws.String("t")}}); err != nil {
		t.Fatal(err)
	}
	got, err := c.GetTable(ctx, &glue.GetTableInput{DatabaseName: aws.String("db"), Name: aws.String("t")})
	if err != nil {
		t.Fatal(err)
	}
	update := func(desc string) error {
		_, err := c.UpdateTable(ctx, &glue.UpdateTableInput{DatabaseName: aws.String("db"), VersionId: got.Table.VersionId,
			TableInput: &types.TableInput{Name: aws.String("t"), Description: aws.String(desc)}})
		return err
	}
	if err := update("first"); err != nil {
		t.Fatalf("the first update of version %s: %v", aws.ToString(got.Table.VersionId), err)
	}
	var cme *types.ConcurrentModificationException
	if err := update("second"); !errors.As(err, &cme) {
		t.Fatalf("the second update of version %s: %v, want ConcurrentModificationException", aws.ToString(got.Table.VersionId), err)
	}
	now, err := c.GetTable(ctx, &glue.GetTableInput{DatabaseName: aws.String("db"), Name: aws.String("t")})
	if err != nil || aws.ToString(now.Table.Description) != "first" || p.Refused.Load() != 1 {
		t.Fatalf("table %+v (%v), %d refused: want the first update only", now.Table, err, p.Refused.Load())
	}
}
