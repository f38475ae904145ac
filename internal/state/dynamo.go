package state

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// DynamoAPI is the part of *dynamodb.Client the store uses.
type DynamoAPI interface {
	GetItem(ctx context.Context, in *dynamodb.GetItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.GetItemOutput, error)
	UpdateItem(ctx context.Context, in *dynamodb.UpdateItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.UpdateItemOutput, error)
	PutItem(ctx context.Context, in *dynamodb.PutItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.PutItemOutput, error)
	DescribeTable(ctx context.Context, in *dynamodb.DescribeTableInput, optFns ...func(*dynamodb.Options)) (*dynamodb.DescribeTableOutput, error)
	CreateTable(ctx context.Context, in *dynamodb.CreateTableInput, optFns ...func(*dynamodb.Options)) (*dynamodb.CreateTableOutput, error)
}

// Dynamo is a Store on one DynamoDB table (layout in the package doc). Each write is a single
// conditional UpdateItem (Acquire) or PutItem (the rest); throttling and transient errors are left to the client's retryer.
type Dynamo struct {
	client DynamoAPI
	table  string
	now    func() time.Time
	// tablePoll is how often EnsureTable re-checks a table that is still being created.
	tablePoll time.Duration
}

var _ Store = (*Dynamo)(nil)

// NewDynamo returns a store on table; now == nil means time.Now.
func NewDynamo(client DynamoAPI, table string, now func() time.Time) *Dynamo {
	if now == nil {
		now = time.Now
	}
	return &Dynamo{client: client, table: table, now: now, tablePoll: time.Second}
}

// attribute names of Acquire's expressions; placeholders "#x" map to names[x].
var names = map[string]string{
	"pk": attrPK, "grp": attrGroup, "stream": attrStream, "topic": attrTopic, "part": attrPartition,
	"owner": attrOwner, "exp": attrExpires, "ver": attrVersion, "upd": attrUpdatedAt,
}

var (
	namePlaceholder  = regexp.MustCompile(`#\w+`)
	valuePlaceholder = regexp.MustCompile(`:\w+`)
)

// update runs one conditional UpdateItem. DynamoDB rejects unused placeholders, so only the
// names and values the expressions mention are sent.
func (d *Dynamo) update(ctx context.Context, key Key, update, cond string, vals map[string]types.AttributeValue) (map[string]types.AttributeValue, error) {
	in := &dynamodb.UpdateItemInput{
		TableName:                           aws.String(d.table),
		Key:                                 map[string]types.AttributeValue{attrPK: str(key.ID())},
		UpdateExpression:                    aws.String(update),
		ConditionExpression:                 aws.String(cond),
		ExpressionAttributeNames:            map[string]string{},
		ExpressionAttributeValues:           map[string]types.AttributeValue{},
		ReturnValues:                        types.ReturnValueAllNew,
		ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld,
	}
	for _, p := range namePlaceholder.FindAllString(update+" "+cond, -1) {
		n, ok := names[p[1:]]
		if !ok {
			panic("state: unknown attribute placeholder " + p)
		}
		in.ExpressionAttributeNames[p] = n
	}
	for _, p := range valuePlaceholder.FindAllString(update+" "+cond, -1) {
		v, ok := vals[p]
		if !ok {
			panic("state: missing expression value " + p)
		}
		in.ExpressionAttributeValues[p] = v
	}
	out, err := d.client.UpdateItem(ctx, in)
	if err != nil {
		return nil, err
	}
	return out.Attributes, nil
}

// Acquire implements Store.
func (d *Dynamo) Acquire(ctx context.Context, key Key, owner string, ttl time.Duration) (State, error) {
	if err := checkAcquire(key, owner, ttl); err != nil {
		return State{}, err
	}
	now := d.now().UnixMilli()
	attrs, err := d.update(ctx, key,
		"SET #grp = :grp, #stream = :stream, #topic = :topic, #part = :part, #owner = :me, #exp = :exp, #upd = :now ADD #ver :one",
		"attribute_not_exists(#pk) OR attribute_not_exists(#owner) OR #owner = :none OR #owner = :me OR #exp <= :now",
		map[string]types.AttributeValue{
			":none": str(""), ":grp": str(key.Group), ":stream": str(key.Stream), ":topic": str(key.Topic),
			":part": num(uint64(key.Partition)), ":me": str(owner), ":exp": numInt(now + ttl.Milliseconds()),
			":now": numInt(now), ":one": num(1),
		})
	if err != nil {
		var ccf *types.ConditionalCheckFailedException
		if errors.As(err, &ccf) {
			old, _ := decodeItem(ccf.Item)
			return State{}, heldError(key, old.Owner, old.LeaseExpires)
		}
		return State{}, d.wrap("acquire", key, err)
	}
	return d.decode("acquire", key, attrs)
}

// write stores the State change makes of s as a whole item, in one PutItem conditioned on s's
// owner, version and intent: an unedited copy at the item's version is the item, so the new one
// is computed here, and a copy whose intent was edited cannot overwrite the stored one. A write
// is one short condition where an UpdateItem of the same change would be an expression of up to
// 15 clauses, which emulators parse slowly (moto_server: 15 ms against 5 ms). Each write stores a random write_id: the SDK retries a write whose reply was
// lost, the retry then fails its version check, and the id shows the first attempt took effect.
func (d *Dynamo) write(ctx context.Context, op string, s State, ttl time.Duration, change func(*State)) (State, error) {
	next := nextState(s, d.now().UnixMilli(), ttl, change)
	writeID := rand.Text()
	item := encodeItem(next, writeID)
	cond, err := writeCondition(op, s)
	if err != nil {
		return State{}, err
	}
	_, err = d.client.PutItem(ctx, &dynamodb.PutItemInput{
		TableName:                           aws.String(d.table),
		Item:                                item,
		ConditionExpression:                 aws.String(cond.expr),
		ExpressionAttributeNames:            cond.names,
		ExpressionAttributeValues:           cond.values,
		ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld,
	})
	if err == nil {
		return d.decode(op, s.Key, item)
	}
	var ccf *types.ConditionalCheckFailedException
	if !errors.As(err, &ccf) {
		if st, ok := d.applied(ctx, s, writeID); ok {
			return st, nil
		}
		return State{}, d.wrap(op, s.Key, err)
	}
	return d.conditionFailed(ctx, op, s, next.Version, writeID, ccf.Item)
}

// nextState is the State a write of change to s stores at now (Unix
// milliseconds): the next version, and with ttl > 0 a lease renewed for ttl.
// s itself is left as it was, for the write's condition.
func nextState(s State, now int64, ttl time.Duration, change func(*State)) State {
	next := s.clone()
	change(&next)
	next.Version, next.UpdatedAt = s.Version+1, msTime(now)
	if ttl > 0 {
		next.LeaseExpires = msTime(now + ttl.Milliseconds())
	}
	return next
}

// putCondition is a PutItem condition expression with the attribute names
// and values it mentions.
type putCondition struct {
	expr   string
	names  map[string]string
	values map[string]types.AttributeValue
}

// writeCondition is the condition a write of s puts its item under: the
// stored item still has s's owner, version and intent (none, or the same
// object key and range), so that a copy of an older version, or one whose
// intent was edited, cannot overwrite it.
func writeCondition(op string, s State) (putCondition, error) {
	c := putCondition{
		expr:   "#owner = :me AND #ver = :v",
		names:  map[string]string{"#owner": attrOwner, "#ver": attrVersion, "#ik": attrIntentKey},
		values: map[string]types.AttributeValue{":me": str(s.Owner), ":v": numInt(s.Version)},
	}
	switch {
	case s.Intent == nil:
		c.expr += " AND (attribute_not_exists(#ik) OR #ik = :ik)"
		c.values[":ik"] = str("")
	case s.Intent.ObjectKey == "":
		return putCondition{}, fmt.Errorf("state: %s %s: the state passed in has an intent without an object key", op, s.Key)
	default:
		c.expr += " AND #ik = :ik AND #if = :if AND #il = :il"
		c.names["#if"], c.names["#il"] = attrIntentFirst, attrIntentLast
		c.values[":ik"], c.values[":if"], c.values[":il"] = str(s.Intent.ObjectKey), num(s.Intent.First), num(s.Intent.Last)
	}
	return c, nil
}

// conditionFailed is the outcome of a write of s whose condition failed
// against old, the item the store returned with the failure (empty if it
// returned none). The write may still have applied (its reply lost and the
// SDK's retry refused), which the item shows by carrying writeID at
// nextVersion; otherwise the error says what holds the partition now.
func (d *Dynamo) conditionFailed(ctx context.Context, op string, s State, nextVersion int64, writeID string, old map[string]types.AttributeValue) (State, error) {
	if len(old) == 0 {
		// Not every store returns the item a failed condition met (minidyn
		// does not for PutItem): read it, to say what holds the partition,
		// or that this write applied, as applied does.
		rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), ambiguityTimeout)
		var err error
		old, err = d.read(rctx, s.Key)
		cancel()
		if err != nil {
			return State{}, fmt.Errorf("%w: %s %s in table %q (the item could not be read back: %w)", ErrLeaseLost, op, s.Key, d.table, err)
		}
		if len(old) == 0 {
			return State{}, lostError(op, s, State{}, false)
		}
	}
	cur, derr := decodeItem(old)
	if derr != nil {
		return State{}, fmt.Errorf("%w: %s %s in table %q: %w", ErrLeaseLost, op, s.Key, d.table, derr)
	}
	// The condition included our owner and version, so an item carrying this
	// write's id at the next version is this write, applied.
	if wid, ok := old[attrWriteID].(*types.AttributeValueMemberS); ok && wid.Value == writeID && cur.Version == nextVersion {
		return cur, nil
	}
	if cur.Owner == s.Owner && cur.Version == s.Version {
		return State{}, intentMismatch(op, s)
	}
	return State{}, lostError(op, s, cur, true)
}

// ambiguityTimeout bounds the read that settles an ambiguous write: it runs
// even when the caller's context has ended, since a write that applied must
// not leave the caller holding a stale version.
const ambiguityTimeout = 3 * time.Second

// applied settles a write that ended in an error other than a failed
// condition (a timeout, a reset connection, a 5xx after the retries): it may
// have applied. A consistent read shows whether the item carries this
// write's id at the next version; if so the write took effect.
func (d *Dynamo) applied(ctx context.Context, s State, writeID string) (State, bool) {
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), ambiguityTimeout)
	defer cancel()
	item, err := d.read(rctx, s.Key)
	if err != nil || len(item) == 0 {
		return State{}, false
	}
	wid, ok := item[attrWriteID].(*types.AttributeValueMemberS)
	if !ok || wid.Value != writeID {
		return State{}, false
	}
	cur, err := d.decode("read back", s.Key, item)
	if err != nil || cur.Version != s.Version+1 {
		return State{}, false
	}
	return cur, true
}

// read is a strongly consistent read of key's item; nil when there is none.
func (d *Dynamo) read(ctx context.Context, key Key) (map[string]types.AttributeValue, error) {
	out, err := d.client.GetItem(ctx, &dynamodb.GetItemInput{
		TableName:      aws.String(d.table),
		Key:            map[string]types.AttributeValue{attrPK: str(key.ID())},
		ConsistentRead: aws.Bool(true),
	})
	if err != nil {
		return nil, err
	}
	return out.Item, nil
}

// SetIntent implements Store.
func (d *Dynamo) SetIntent(ctx context.Context, s State, in Intent, ttl time.Duration) (State, error) {
	if err := checkSetIntent(s, in, ttl); err != nil {
		return State{}, err
	}
	return d.write(ctx, "set intent", s, ttl, setIntent(in))
}

// Complete implements Store.
func (d *Dynamo) Complete(ctx context.Context, s State, done Done, ttl time.Duration) (State, error) {
	if err := checkComplete(s, done, ttl); err != nil {
		return State{}, err
	}
	return d.write(ctx, "complete", s, leaseAfter(done, ttl), complete(done))
}

// Adopt implements Store.
func (d *Dynamo) Adopt(ctx context.Context, s State, incarnation uint64, ttl time.Duration) (State, error) {
	if err := checkIncarnation("adopt", s, incarnation, ttl); err != nil {
		return State{}, err
	}
	return d.write(ctx, "adopt", s, ttl, adopt(incarnation))
}

// Reset implements Store.
func (d *Dynamo) Reset(ctx context.Context, s State, incarnation uint64, generation uint32, ttl time.Duration) (State, error) {
	if err := checkReset(s, incarnation, generation, ttl); err != nil {
		return State{}, err
	}
	return d.write(ctx, "reset", s, ttl, reset(incarnation, generation))
}

// CarryOver implements Store.
func (d *Dynamo) CarryOver(ctx context.Context, s State, from Carried, ttl time.Duration) (State, error) {
	if err := checkCarryOver(s, from, ttl); err != nil {
		return State{}, err
	}
	return d.write(ctx, "carry over", s, ttl, carryOver(from))
}

// Abandon implements Store.
func (d *Dynamo) Abandon(ctx context.Context, s State, ttl time.Duration) (State, error) {
	if err := checkAbandon(s, ttl); err != nil {
		return State{}, err
	}
	return d.write(ctx, "abandon", s, ttl, abandon)
}

// Skip implements Store.
func (d *Dynamo) Skip(ctx context.Context, s State, lastWritten, gapMessages uint64, ttl time.Duration) (State, error) {
	if err := checkSkip(s, lastWritten, ttl); err != nil {
		return State{}, err
	}
	return d.write(ctx, "skip", s, ttl, skip(lastWritten, gapMessages))
}

// Renew implements Store.
func (d *Dynamo) Renew(ctx context.Context, s State, ttl time.Duration) (State, error) {
	if err := checkHeld("renew", s, ttl); err != nil {
		return State{}, err
	}
	return d.write(ctx, "renew", s, ttl, renew)
}

// Release implements Store.
func (d *Dynamo) Release(ctx context.Context, s State) error {
	if s.Owner == "" {
		return nil
	}
	if err := s.Key.Validate(); err != nil {
		return err
	}
	_, err := d.write(ctx, "release", s, 0, release)
	if errors.Is(err, ErrLeaseLost) && !errors.Is(err, ErrStale) {
		logReleaseLost(ctx, s, err)
		return nil
	}
	return err
}

// Get implements Store; the read is strongly consistent.
func (d *Dynamo) Get(ctx context.Context, key Key) (State, bool, error) {
	if err := key.Validate(); err != nil {
		return State{}, false, err
	}
	item, err := d.read(ctx, key)
	if err != nil {
		return State{}, false, d.wrap("get", key, err)
	}
	if len(item) == 0 {
		return State{}, false, nil
	}
	s, err := d.decode("get", key, item)
	return s, err == nil, err
}

func (d *Dynamo) decode(op string, key Key, item map[string]types.AttributeValue) (State, error) {
	s, err := decodeItem(item)
	if err != nil {
		return State{}, fmt.Errorf("state: %s %s in table %q: %w", op, key, d.table, err)
	}
	if s.Key != key {
		return State{}, fmt.Errorf("state: %s %s in table %q: item names key %s", op, key, d.table, s.Key)
	}
	return s, nil
}

func (d *Dynamo) wrap(op string, key Key, err error) error {
	var rnf *types.ResourceNotFoundException
	if errors.As(err, &rnf) {
		return fmt.Errorf("state: %s %s: %w", op, key, d.missing(err))
	}
	return fmt.Errorf("state: %s %s in table %q: %w", op, key, d.table, err)
}

func (d *Dynamo) missing(err error) error {
	return fmt.Errorf("%w: table %q (the SAM template creates it; the poller only with -create-table, or at a local endpoint): %w", ErrTableMissing, d.table, err)
}

// Check verifies the table exists and has the expected key, for runs that must not create it.
func (d *Dynamo) Check(ctx context.Context) error {
	out, err := d.client.DescribeTable(ctx, &dynamodb.DescribeTableInput{TableName: aws.String(d.table)})
	if err != nil {
		var rnf *types.ResourceNotFoundException
		if errors.As(err, &rnf) {
			return d.missing(err)
		}
		return fmt.Errorf("state: describe table %q: %w", d.table, err)
	}
	return d.checkSchema(out.Table)
}

func (d *Dynamo) checkSchema(t *types.TableDescription) error {
	if t == nil {
		return fmt.Errorf("state: describe table %q: no table description in reply", d.table)
	}
	ks := t.KeySchema
	ok := len(ks) == 1 && ks[0].KeyType == types.KeyTypeHash && aws.ToString(ks[0].AttributeName) == attrPK
	for _, a := range t.AttributeDefinitions { // minidyn leaves these out
		if aws.ToString(a.AttributeName) == attrPK && a.AttributeType != types.ScalarAttributeTypeS {
			ok = false
		}
	}
	if !ok {
		return fmt.Errorf("state: table %q must have exactly one key, a string partition key %q", d.table, attrPK)
	}
	return nil
}

// EnsureTable creates the table (on-demand billing) if it is missing and waits until it is usable.
// For the poller; the Lambda uses Check, since the SAM template owns the table there.
func (d *Dynamo) EnsureTable(ctx context.Context) error {
	if err := d.Check(ctx); err == nil || !errors.Is(err, ErrTableMissing) {
		if err == nil {
			return d.waitActive(ctx)
		}
		return err
	}
	_, err := d.client.CreateTable(ctx, &dynamodb.CreateTableInput{
		TableName:            aws.String(d.table),
		BillingMode:          types.BillingModePayPerRequest,
		AttributeDefinitions: []types.AttributeDefinition{{AttributeName: aws.String(attrPK), AttributeType: types.ScalarAttributeTypeS}},
		KeySchema:            []types.KeySchemaElement{{AttributeName: aws.String(attrPK), KeyType: types.KeyTypeHash}},
	})
	var inUse *types.ResourceInUseException
	if err != nil && !errors.As(err, &inUse) { // another poller creating it at the same time is fine
		return fmt.Errorf("state: create table %q: %w", d.table, err)
	}
	return d.waitActive(ctx)
}

// waitActive polls until the table is ACTIVE; an empty status counts as ready (minidyn reports none).
func (d *Dynamo) waitActive(ctx context.Context) error {
	for {
		out, err := d.client.DescribeTable(ctx, &dynamodb.DescribeTableInput{TableName: aws.String(d.table)})
		var rnf *types.ResourceNotFoundException
		switch {
		case errors.As(err, &rnf):
			// eventual consistency right after CreateTable: keep waiting
		case err != nil:
			return fmt.Errorf("state: wait for table %q: %w", d.table, err)
		case out.Table == nil:
			return fmt.Errorf("state: wait for table %q: no table description in reply", d.table)
		case out.Table.TableStatus == types.TableStatusActive, out.Table.TableStatus == "",
			out.Table.TableStatus == types.TableStatusUpdating:
			return d.checkSchema(out.Table)
		case out.Table.TableStatus != types.TableStatusCreating:
			return fmt.Errorf("state: table %q is %s, not usable", d.table, out.Table.TableStatus)
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("state: wait for table %q to become active: %w", d.table, ctx.Err())
		case <-time.After(d.tablePoll):
		}
	}
}

func str(s string) types.AttributeValue { return &types.AttributeValueMemberS{Value: s} }
func num(n uint64) types.AttributeValue {
	return &types.AttributeValueMemberN{Value: strconv.FormatUint(n, 10)}
}
func numInt(n int64) types.AttributeValue {
	return &types.AttributeValueMemberN{Value: strconv.FormatInt(n, 10)}
}
