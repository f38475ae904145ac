package state

import (
	"context"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

var update = flag.Bool("update", false, "rewrite testdata golden files")

// validItem is the item of testKey after one completed object and an open intent.
func validItem() map[string]types.AttributeValue {
	return map[string]types.AttributeValue{
		attrPK: str(testKey.ID()), attrGroup: str(testKey.Group), attrStream: str(testKey.Stream), attrTopic: str(testKey.Topic),
		attrPartition: num(uint64(testKey.Partition)), attrOwner: str("run-a"), attrExpires: numInt(1_800_000_000_123),
		attrVersion: num(4), attrHasWritten: &types.AttributeValueMemberBOOL{Value: true}, attrLastWritten: num(99),
		attrIntentFirst: num(100), attrIntentLast: num(199), attrIntentKey: str("k"),
		attrObjects: num(1), attrMessages: num(100), attrBytes: num(5000), attrGapMessages: num(2), attrUpdatedAt: numInt(1_800_000_000_000),
	}
}

func TestDecodeItem(t *testing.T) {
	got, err := decodeItem(validItem())
	if err != nil {
		t.Fatalf("decodeItem(valid): %v", err)
	}
	want := State{Key: testKey, Owner: "run-a", LeaseExpires: time.UnixMilli(1_800_000_000_123).UTC(), Version: 4,
		HasWritten: true, LastWritten: 99, Intent: &Intent{First: 100, Last: 199, ObjectKey: "k"},
		Objects: 1, Messages: 100, Bytes: 5000, GapMessages: 2, UpdatedAt: time.UnixMilli(1_800_000_000_000).UTC()}
	assertState(t, "decodeItem", got, want)

	tests := []struct {
		name    string
		edit    func(map[string]types.AttributeValue)
		wantMsg string
	}{
		{"number as string", func(m map[string]types.AttributeValue) { m[attrVersion] = str("4") }, "attribute version: want type N"},
		{"negative counter", func(m map[string]types.AttributeValue) { m[attrBytes] = &types.AttributeValueMemberN{Value: "-1"} }, `attribute bytes: "-1" is not a uint64`},
		{"fractional offset", func(m map[string]types.AttributeValue) {
			m[attrLastWritten] = &types.AttributeValueMemberN{Value: "1.5"}
		}, "attribute last_written"},
		{"partition too big", func(m map[string]types.AttributeValue) { m[attrPartition] = num(1 << 32) }, "attribute partition_id"},
		{"owner as number", func(m map[string]types.AttributeValue) { m[attrOwner] = num(1) }, "attribute lease_owner: want type S"},
		{"has_written as string", func(m map[string]types.AttributeValue) { m[attrHasWritten] = str("true") }, "attribute has_written: want type BOOL"},
		{"intent key without range", func(m map[string]types.AttributeValue) { delete(m, attrIntentLast) }, "intent_key is set but"},
		{"intent backwards", func(m map[string]types.AttributeValue) { m[attrIntentFirst] = num(300) }, "300 is after 199"},
		{"pk mismatch", func(m map[string]types.AttributeValue) { m[attrTopic] = str("other") }, "does not match the key attributes"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			item := validItem()
			tc.edit(item)
			_, err := decodeItem(item)
			if err == nil || !strings.Contains(err.Error(), tc.wantMsg) {
				t.Fatalf("err = %v, want one containing %q", err, tc.wantMsg)
			}
		})
	}

	t.Run("cleared intent", func(t *testing.T) {
		item := validItem()
		item[attrIntentKey], item[attrIntentFirst], item[attrIntentLast] = str(""), num(0), num(0)
		s, err := decodeItem(item)
		if err != nil || s.Intent != nil {
			t.Fatalf("decodeItem = intent %+v, err %v; want no intent", s.Intent, err)
		}
	})
}

// FuzzDecodeItem feeds arbitrary attribute text; decoding must not panic and what it accepts must be consistent.
func FuzzDecodeItem(f *testing.F) {
	f.Add("sink/orders/events/3", "3", "4", "99", "100", "199", "k", "5000")
	f.Add("a/b/c/0", "0", "-1", "x", "", "", "", "1e3")
	f.Fuzz(func(t *testing.T, pk, partition, version, lastWritten, intentFirst, intentLast, intentKey, bytes string) {
		item := validItem()
		item[attrPK] = str(pk)
		for name, v := range map[string]string{attrPartition: partition, attrVersion: version, attrLastWritten: lastWritten,
			attrIntentFirst: intentFirst, attrIntentLast: intentLast, attrBytes: bytes} {
			if v == "" {
				delete(item, name)
			} else {
				item[name] = &types.AttributeValueMemberN{Value: v}
			}
		}
		item[attrIntentKey] = str(intentKey)
		s, err := decodeItem(item)
		if err != nil {
			return
		}
		if s.Key.ID() != pk {
			t.Fatalf("accepted pk %q for key %s", pk, s.Key.ID())
		}
		if s.Intent != nil && (s.Intent.First > s.Intent.Last || s.Intent.ObjectKey != intentKey) {
			t.Fatalf("accepted intent %+v from first=%q last=%q key=%q", *s.Intent, intentFirst, intentLast, intentKey)
		}
		if (s.Intent == nil) != (intentKey == "") {
			t.Fatalf("intent %v for intent_key %q", s.Intent, intentKey)
		}
	})
}

// itemJSON renders a raw item with sorted attribute names, so a golden file pins the table layout.
func itemJSON(t *testing.T, item map[string]types.AttributeValue) []byte {
	t.Helper()
	out := map[string]map[string]any{}
	for k, v := range item {
		switch v := v.(type) {
		case *types.AttributeValueMemberS:
			if k == attrWriteID && v.Value != "" { // random per write
				v = &types.AttributeValueMemberS{Value: "<random>"}
			}
			out[k] = map[string]any{"S": v.Value}
		case *types.AttributeValueMemberN:
			out[k] = map[string]any{"N": v.Value}
		case *types.AttributeValueMemberBOOL:
			out[k] = map[string]any{"BOOL": v.Value}
		default:
			t.Fatalf("attribute %s has unexpected type %T", k, v)
		}
	}
	b, err := json.MarshalIndent(out, "", "  ") // map keys are sorted
	if err != nil {
		t.Fatal(err)
	}
	return append(b, '\n')
}

// checkItemLayout drives a fixed history through a Dynamo store and compares the raw items with
// testdata; attribute names and encodings are a storage format that deployed tables depend on.
func checkItemLayout(t *testing.T, client *dynamodb.Client) {
	ctx := context.Background()
	clock := newFakeClock()
	d := dynamoStores(client)(t, clock.Now).(*Dynamo)
	raw := func() map[string]types.AttributeValue {
		out, err := client.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String(d.table),
			Key: map[string]types.AttributeValue{attrPK: str(testKey.ID())}, ConsistentRead: aws.Bool(true)})
		if err != nil {
			t.Fatal(err)
		}
		return out.Item
	}
	s, err := d.Acquire(ctx, testKey, "run-a", ttl)
	if err != nil {
		t.Fatal(err)
	}
	steps := []struct {
		golden string
		write  func() (State, error)
	}{
		{"item_intent.golden.json", func() (State, error) {
			return d.SetIntent(ctx, s, Intent{First: 0, Last: 99, ObjectKey: "iggy/orders/00003-0-99.jsonl"}, ttl)
		}},
		{"item_complete.golden.json", func() (State, error) { return d.Complete(ctx, s, Done{Messages: 98, Bytes: 4096, GapMessages: 2}, ttl) }},
		{"item_released.golden.json", func() (State, error) { return s, d.Release(ctx, s) }},
	}
	for _, step := range steps {
		clock.Advance(time.Second)
		if s, err = step.write(); err != nil {
			t.Fatalf("%s: %v", step.golden, err)
		}
		got := itemJSON(t, raw())
		path := filepath.Join("testdata", step.golden)
		if *update {
			if err := os.WriteFile(path, got, 0o644); err != nil {
				t.Fatal(err)
			}
		}
		want, err := os.ReadFile(path)
		if err != nil {
			t.Fatalf("%v (run go test -update to create it)", err)
		}
		if string(got) != string(want) {
			t.Errorf("item after %s differs from %s:\n got %s\nwant %s", strings.TrimSuffix(step.golden, ".golden.json"), path, got, want)
		}
	}
}

// checkUnknownKept: every write after Acquire stores the whole item, so an
// attribute a later version of the sink added must come through the writes
// of this version unchanged, or a rollback loses it. (What it carries is the
// item as last read: here by Get, as a run reads it at Acquire; an edit made
// under a live lease is undone by the holder's next write, as the package
// doc says.)
func checkUnknownKept(t *testing.T, client *dynamodb.Client) {
	ctx := context.Background()
	d := dynamoStores(client)(t, nil).(*Dynamo)
	key := map[string]types.AttributeValue{attrPK: str(testKey.ID())}
	if _, err := d.Acquire(ctx, testKey, "run-a", ttl); err != nil {
		t.Fatal(err)
	}
	if _, err := client.UpdateItem(ctx, &dynamodb.UpdateItemInput{TableName: aws.String(d.table), Key: key,
		UpdateExpression:          aws.String("SET future_field = :f"),
		ExpressionAttributeValues: map[string]types.AttributeValue{":f": str("kept")}}); err != nil {
		t.Fatal(err)
	}
	s, _, err := d.Get(ctx, testKey)
	if err != nil {
		t.Fatal(err)
	}
	if s, err = d.SetIntent(ctx, s, Intent{First: 0, Last: 9, ObjectKey: "k"}, ttl); err != nil {
		t.Fatal(err)
	}
	if s, err = d.Complete(ctx, s, Done{Messages: 10}, ttl); err != nil {
		t.Fatal(err)
	}
	if err := d.Release(ctx, s); err != nil {
		t.Fatal(err)
	}
	out, err := client.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String(d.table), Key: key, ConsistentRead: aws.Bool(true)})
	if err != nil {
		t.Fatal(err)
	}
	if v, ok := out.Item["future_field"].(*types.AttributeValueMemberS); !ok || v.Value != "kept" {
		t.Fatalf("future_field after three writes: %#v, want S \"kept\"", out.Item["future_field"])
	}
	if got, err := decodeItem(out.Item); err != nil || got.LastWritten != 9 || got.Owner != "" {
		t.Fatalf("item after the writes: %s, %v; want last written 9, released", stateString(got), err)
	}
}
