package dynamodb_test

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	crc32pkg "hash/crc32"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
	"github.com/aws/aws-sdk-go-v2/credentials"
	sdk "github.com/aws/aws-sdk-go-v2/service/dynamodb"
	sdktypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/smithy-go"
	"github.com/google/go-cmp/cmp"

	"github.com/countersign/countersign/shared/awslite"
	"github.com/countersign/countersign/shared/awslite/dynamodb"
	"github.com/countersign/countersign/shared/awslite/dynamodb/types"
)

func testConfig() aws.Config {
	return aws.Config{Region: "us-east-1", Credentials: credentials.NewStaticCredentialsProvider("AKIDTEST", "SECRETTEST", "SESSIONTOKEN")}
}

// ours is the SDK's attribute value as ours.
func ours(v sdktypes.AttributeValue) types.AttributeValue {
	switch v := v.(type) {
	case *sdktypes.AttributeValueMemberS:
		return &types.AttributeValueMemberS{Value: v.Value}
	case *sdktypes.AttributeValueMemberN:
		return &types.AttributeValueMemberN{Value: v.Value}
	case *sdktypes.AttributeValueMemberB:
		return &types.AttributeValueMemberB{Value: v.Value}
	case *sdktypes.AttributeValueMemberBOOL:
		return &types.AttributeValueMemberBOOL{Value: v.Value}
	case *sdktypes.AttributeValueMemberNULL:
		return &types.AttributeValueMemberNULL{Value: v.Value}
	case *sdktypes.AttributeValueMemberSS:
		return &types.AttributeValueMemberSS{Value: v.Value}
	case *sdktypes.AttributeValueMemberNS:
		return &types.AttributeValueMemberNS{Value: v.Value}
	case *sdktypes.AttributeValueMemberBS:
		return &types.AttributeValueMemberBS{Value: v.Value}
	case *sdktypes.AttributeValueMemberL:
		l := make([]types.AttributeValue, len(v.Value))
		for i, e := range v.Value {
			l[i] = ours(e)
		}
		return &types.AttributeValueMemberL{Value: l}
	case *sdktypes.AttributeValueMemberM:
		return &types.AttributeValueMemberM{Value: oursMap(v.Value)}
	}
	panic(fmt.Sprintf("attribute value %T", v))
}

func oursMap(m map[string]sdktypes.AttributeValue) map[string]types.AttributeValue {
	if m == nil {
		return nil
	}
	out := make(map[string]types.AttributeValue, len(m))
	for k, v := range m {
		out[k] = ours(v)
	}
	return out
}

func oursCapacity(c *sdktypes.ConsumedCapacity) *types.ConsumedCapacity {
	if c == nil {
		return nil
	}
	cap := func(c *sdktypes.Capacity) *types.Capacity {
		if c == nil {
			return nil
		}
		return &types.Capacity{CapacityUnits: c.CapacityUnits, ReadCapacityUnits: c.ReadCapacityUnits, WriteCapacityUnits: c.WriteCapacityUnits}
	}
	caps := func(m map[string]sdktypes.Capacity) map[string]types.Capacity {
		if m == nil {
			return nil
		}
		out := map[string]types.Capacity{}
		for k, v := range m {
			out[k] = *cap(&v)
		}
		return out
	}
	return &types.ConsumedCapacity{TableName: c.TableName, CapacityUnits: c.CapacityUnits, ReadCapacityUnits: c.ReadCapacityUnits,
		WriteCapacityUnits: c.WriteCapacityUnits, Table: cap(c.Table), GlobalSecondaryIndexes: caps(c.GlobalSecondaryIndexes), LocalSecondaryIndexes: caps(c.LocalSecondaryIndexes)}
}

// everyKind is an item with every kind of attribute value, nested, with
// the edges of each: empty strings and binary, numbers as DynamoDB
// writes them, escapes and non-ASCII.
func everyKind() map[string]sdktypes.AttributeValue {
	return map[string]sdktypes.AttributeValue{
		"pk":      &sdktypes.AttributeValueMemberS{Value: "CRED#c1"},
		"empty":   &sdktypes.AttributeValueMemberS{Value: ""},
		"escapes": &sdktypes.AttributeValueMemberS{Value: "\"q\" \\ / <a&b> \n\t\u0000\u2028 é 😀"},
		"json":    &sdktypes.AttributeValueMemberS{Value: `{"id":"c1","n":[1,2]}`},
		"n":       &sdktypes.AttributeValueMemberN{Value: "9223372036854775807"},
		"neg":     &sdktypes.AttributeValueMemberN{Value: "-1.5E+10"},
		"bin":     &sdktypes.AttributeValueMemberB{Value: []byte{0, 1, 0xfe, 0xff, '+', '/'}},
		"nobin":   &sdktypes.AttributeValueMemberB{Value: []byte{}},
		"t":       &sdktypes.AttributeValueMemberBOOL{Value: true},
		"f":       &sdktypes.AttributeValueMemberBOOL{Value: false},
		"null":    &sdktypes.AttributeValueMemberNULL{Value: true},
		"ss":      &sdktypes.AttributeValueMemberSS{Value: []string{"a", "b c", "é"}},
		"ns":      &sdktypes.AttributeValueMemberNS{Value: []string{"1", "-2.5", "3e3"}},
		"bs":      &sdktypes.AttributeValueMemberBS{Value: [][]byte{{0}, {1, 2, 3}}},
		"l": &sdktypes.AttributeValueMemberL{Value: []sdktypes.AttributeValue{
			&sdktypes.AttributeValueMemberS{Value: "x"}, &sdktypes.AttributeValueMemberN{Value: "1"},
			&sdktypes.AttributeValueMemberL{Value: []sdktypes.AttributeValue{}},
			&sdktypes.AttributeValueMemberM{Value: map[string]sdktypes.AttributeValue{"k": &sdktypes.AttributeValueMemberNULL{Value: true}}},
		}},
		"emptyl": &sdktypes.AttributeValueMemberL{Value: []sdktypes.AttributeValue{}},
		"m": &sdktypes.AttributeValueMemberM{Value: map[string]sdktypes.AttributeValue{
			"a": &sdktypes.AttributeValueMemberS{Value: "b"},
			"":  &sdktypes.AttributeValueMemberBOOL{Value: true},
			"inner": &sdktypes.AttributeValueMemberM{Value: map[string]sdktypes.AttributeValue{
				"ss": &sdktypes.AttributeValueMemberSS{Value: []string{"z"}}}},
		}},
		"emptym": &sdktypes.AttributeValueMemberM{Value: map[string]sdktypes.AttributeValue{}},
	}
}

// request is what the service saw of one request.
type request struct {
	Target, ContentType, AcceptEncoding, Scope, Token string
	Body                                              any // the body as a JSON value
}

// recorder answers every request with status and body (and the body's
// X-Amz-Crc32) and keeps what it saw.
func recorder(tb testing.TB, status int, answer string) (*httptest.Server, func() []request) {
	tb.Helper()
	var mu sync.Mutex
	var got []request
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		s := request{Target: r.Header.Get("X-Amz-Target"), ContentType: r.Header.Get("Content-Type"),
			AcceptEncoding: r.Header.Get("Accept-Encoding"), Token: r.Header.Get("X-Amz-Security-Token")}
		if _, after, ok := strings.Cut(r.Header.Get("Authorization"), "Credential=AKIDTEST/"); ok {
			s.Scope, _, _ = strings.Cut(after, ",")
			s.Scope = s.Scope[strings.IndexByte(s.Scope, '/'):] // without the date
		}
		if err := json.Unmarshal(b, &s.Body); err != nil {
			tb.Errorf("the body %q is not JSON: %v", b, err)
		}
		mu.Lock()
		got = append(got, s)
		mu.Unlock()
		w.Header().Set("X-Amz-Crc32", fmt.Sprint(crc32(answer)))
		w.WriteHeader(status)
		io.WriteString(w, answer)
	}))
	tb.Cleanup(srv.Close)
	return srv, func() []request {
		mu.Lock()
		defer mu.Unlock()
		return append([]request(nil), got...)
	}
}

func sdkClient(endpoint string) *sdk.Client {
	return sdk.NewFromConfig(testConfig(), func(o *sdk.Options) { o.BaseEndpoint = aws.String(endpoint) })
}

func ourClient(endpoint string) *dynamodb.Client {
	return dynamodb.NewFromConfig(testConfig(), func(o *dynamodb.Options) { o.BaseEndpoint = aws.String(endpoint) })
}

// TestRequestsAsTheSDKSends sends each operation with the SDK's client and
// with ours, the same input, and compares what the service sees (the
// operation, the content type, the signature's scope and the body as a
// JSON value), then what each read of the same answer.
func TestRequestsAsTheSDKSends(t *testing.T) {
	ctx := context.Background()
	item := everyKind()
	key := map[string]sdktypes.AttributeValue{"pk": &sdktypes.AttributeValueMemberS{Value: "CRED#c1"}, "sk": &sdktypes.AttributeValueMemberS{Value: "CRED"}}
	names := map[string]string{"#v": "version", "#d": "data"}
	values := map[string]sdktypes.AttributeValue{":v": &sdktypes.AttributeValueMemberN{Value: "3"}, ":d": item["m"], ":b": item["bin"]}
	capacity := `"ConsumedCapacity": {"TableName": "t", "CapacityUnits": 2.5, "WriteCapacityUnits": 2.5, "Table": {"CapacityUnits": 1}, "GlobalSecondaryIndexes": {"gsi1": {"CapacityUnits": 1.5}}}`
	itemJSON := func() string {
		b, err := json.Marshal(wireItem(item))
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}()
	tests := []struct {
		name   string
		answer string
		// sdk and ours send the operation and return what they read, ours
		// as the SDK's would be after ours() (cmp compares them).
		sdk, ours func(endpoint string) (any, error)
	}{
		{name: "GetItem", answer: `{"Item": ` + itemJSON + `, ` + capacity + `}`,
			sdk: func(e string) (any, error) {
				out, err := sdkClient(e).GetItem(ctx, &sdk.GetItemInput{TableName: aws.String("t"), Key: key, ConsistentRead: aws.Bool(true),
					ProjectionExpression: aws.String("#v, #d"), ExpressionAttributeNames: names, ReturnConsumedCapacity: sdktypes.ReturnConsumedCapacityTotal})
				if err != nil {
					return nil, err
				}
				return dynamodb.GetItemOutput{Item: oursMap(out.Item), ConsumedCapacity: oursCapacity(out.ConsumedCapacity)}, nil
			},
			ours: func(e string) (any, error) {
				out, err := ourClient(e).GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String("t"), Key: oursMap(key), ConsistentRead: aws.Bool(true),
					ProjectionExpression: aws.String("#v, #d"), ExpressionAttributeNames: names, ReturnConsumedCapacity: types.ReturnConsumedCapacityTotal})
				if err != nil {
					return nil, err
				}
				return *out, nil
			}},
		{name: "GetItem, none", answer: `{}`,
			sdk: func(e string) (any, error) {
				out, err := sdkClient(e).GetItem(ctx, &sdk.GetItemInput{TableName: aws.String("t"), Key: key})
				if err != nil {
					return nil, err
				}
				return out.Item == nil, nil
			},
			ours: func(e string) (any, error) {
				out, err := ourClient(e).GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String("t"), Key: oursMap(key)})
				if err != nil {
					return nil, err
				}
				return out.Item == nil, nil
			}},
		{name: "PutItem", answer: `{"Attributes": ` + itemJSON + `, ` + capacity + `}`,
			sdk: func(e string) (any, error) {
				out, err := sdkClient(e).PutItem(ctx, &sdk.PutItemInput{TableName: aws.String("t"), Item: item, ConditionExpression: aws.String("#v = :v"),
					ExpressionAttributeNames: names, ExpressionAttributeValues: values, ReturnValues: sdktypes.ReturnValueAllOld, ReturnConsumedCapacity: sdktypes.ReturnConsumedCapacityIndexes})
				if err != nil {
					return nil, err
				}
				return dynamodb.PutItemOutput{Attributes: oursMap(out.Attributes), ConsumedCapacity: oursCapacity(out.ConsumedCapacity)}, nil
			},
			ours: func(e string) (any, error) {
				out, err := ourClient(e).PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String("t"), Item: oursMap(item), ConditionExpression: aws.String("#v = :v"),
					ExpressionAttributeNames: names, ExpressionAttributeValues: oursMap(values), ReturnValues: types.ReturnValueAllOld, ReturnConsumedCapacity: types.ReturnConsumedCapacityIndexes})
				if err != nil {
					return nil, err
				}
				return *out, nil
			}},
		{name: "UpdateItem", answer: `{"Attributes": {"n": {"N": "4"}}}`,
			sdk: func(e string) (any, error) {
				out, err := sdkClient(e).UpdateItem(ctx, &sdk.UpdateItemInput{TableName: aws.String("t"), Key: key, UpdateExpression: aws.String("ADD #v :v SET #d = :d"),
					ConditionExpression: aws.String("attribute_exists(pk)"), ExpressionAttributeNames: names, ExpressionAttributeValues: values, ReturnValues: sdktypes.ReturnValueUpdatedNew})
				if err != nil {
					return nil, err
				}
				return dynamodb.UpdateItemOutput{Attributes: oursMap(out.Attributes), ConsumedCapacity: oursCapacity(out.ConsumedCapacity)}, nil
			},
			ours: func(e string) (any, error) {
				out, err := ourClient(e).UpdateItem(ctx, &dynamodb.UpdateItemInput{TableName: aws.String("t"), Key: oursMap(key), UpdateExpression: aws.String("ADD #v :v SET #d = :d"),
					ConditionExpression: aws.String("attribute_exists(pk)"), ExpressionAttributeNames: names, ExpressionAttributeValues: oursMap(values), ReturnValues: types.ReturnValueUpdatedNew})
				if err != nil {
					return nil, err
				}
				return *out, nil
			}},
		{name: "DeleteItem", answer: `{"Attributes": ` + itemJSON + `}`,
			sdk: func(e string) (any, error) {
				out, err := sdkClient(e).DeleteItem(ctx, &sdk.DeleteItemInput{TableName: aws.String("t"), Key: key, ConditionExpression: aws.String("#v = :v"),
					ExpressionAttributeNames: names, ExpressionAttributeValues: values, ReturnValues: sdktypes.ReturnValueAllOld, ReturnConsumedCapacity: sdktypes.ReturnConsumedCapacityNone})
				if err != nil {
					return nil, err
				}
				return dynamodb.DeleteItemOutput{Attributes: oursMap(out.Attributes), ConsumedCapacity: oursCapacity(out.ConsumedCapacity)}, nil
			},
			ours: func(e string) (any, error) {
				out, err := ourClient(e).DeleteItem(ctx, &dynamodb.DeleteItemInput{TableName: aws.String("t"), Key: oursMap(key), ConditionExpression: aws.String("#v = :v"),
					ExpressionAttributeNames: names, ExpressionAttributeValues: oursMap(values), ReturnValues: types.ReturnValueAllOld, ReturnConsumedCapacity: types.ReturnConsumedCapacityNone})
				if err != nil {
					return nil, err
				}
				return *out, nil
			}},
		{name: "Query", answer: `{"Items": [` + itemJSON + `, {"pk": {"S": "x"}}], "Count": 2, "ScannedCount": 3, "LastEvaluatedKey": {"pk": {"S": "x"}, "sk": {"S": "y"}}, ` + capacity + `}`,
			sdk: func(e string) (any, error) {
				out, err := sdkClient(e).Query(ctx, &sdk.QueryInput{TableName: aws.String("t"), IndexName: aws.String("gsi2"), KeyConditionExpression: aws.String("#v = :v AND begins_with(#d, :d)"),
					FilterExpression: aws.String("#d <> :b"), ProjectionExpression: aws.String("pk"), ExpressionAttributeNames: names, ExpressionAttributeValues: values,
					ExclusiveStartKey: key, Limit: aws.Int32(25), ScanIndexForward: aws.Bool(false), ConsistentRead: aws.Bool(false), ReturnConsumedCapacity: sdktypes.ReturnConsumedCapacityTotal})
				if err != nil {
					return nil, err
				}
				items := make([]map[string]types.AttributeValue, len(out.Items))
				for i, it := range out.Items {
					items[i] = oursMap(it)
				}
				return dynamodb.QueryOutput{Items: items, Count: out.Count, ScannedCount: out.ScannedCount, LastEvaluatedKey: oursMap(out.LastEvaluatedKey), ConsumedCapacity: oursCapacity(out.ConsumedCapacity)}, nil
			},
			ours: func(e string) (any, error) {
				out, err := ourClient(e).Query(ctx, &dynamodb.QueryInput{TableName: aws.String("t"), IndexName: aws.String("gsi2"), KeyConditionExpression: aws.String("#v = :v AND begins_with(#d, :d)"),
					FilterExpression: aws.String("#d <> :b"), ProjectionExpression: aws.String("pk"), ExpressionAttributeNames: names, ExpressionAttributeValues: oursMap(values),
					ExclusiveStartKey: oursMap(key), Limit: aws.Int32(25), ScanIndexForward: aws.Bool(false), ConsistentRead: aws.Bool(false), ReturnConsumedCapacity: types.ReturnConsumedCapacityTotal})
				if err != nil {
					return nil, err
				}
				return *out, nil
			}},
		{name: "CreateTable", answer: `{"TableDescription": {"TableName": "t", "TableStatus": "CREATING", "ItemCount": 0, "CreationDateTime": 1.7e9}}`,
			sdk: func(e string) (any, error) {
				out, err := sdkClient(e).CreateTable(ctx, &sdk.CreateTableInput{TableName: aws.String("t"), BillingMode: sdktypes.BillingModePayPerRequest,
					AttributeDefinitions: []sdktypes.AttributeDefinition{{AttributeName: aws.String("pk"), AttributeType: sdktypes.ScalarAttributeTypeS}},
					KeySchema:            []sdktypes.KeySchemaElement{{AttributeName: aws.String("pk"), KeyType: sdktypes.KeyTypeHash}},
					GlobalSecondaryIndexes: []sdktypes.GlobalSecondaryIndex{{IndexName: aws.String("g"),
						KeySchema:  []sdktypes.KeySchemaElement{{AttributeName: aws.String("pk"), KeyType: sdktypes.KeyTypeRange}},
						Projection: &sdktypes.Projection{ProjectionType: sdktypes.ProjectionTypeKeysOnly}}}})
				if err != nil {
					return nil, err
				}
				d := out.TableDescription
				return types.TableDescription{TableName: d.TableName, TableStatus: types.TableStatus(d.TableStatus), ItemCount: d.ItemCount}, nil
			},
			ours: func(e string) (any, error) {
				out, err := ourClient(e).CreateTable(ctx, &dynamodb.CreateTableInput{TableName: aws.String("t"), BillingMode: types.BillingModePayPerRequest,
					AttributeDefinitions: []types.AttributeDefinition{{AttributeName: aws.String("pk"), AttributeType: types.ScalarAttributeTypeS}},
					KeySchema:            []types.KeySchemaElement{{AttributeName: aws.String("pk"), KeyType: types.KeyTypeHash}},
					GlobalSecondaryIndexes: []types.GlobalSecondaryIndex{{IndexName: aws.String("g"),
						KeySchema:  []types.KeySchemaElement{{AttributeName: aws.String("pk"), KeyType: types.KeyTypeRange}},
						Projection: &types.Projection{ProjectionType: types.ProjectionTypeKeysOnly}}}})
				if err != nil {
					return nil, err
				}
				return *out.TableDescription, nil
			}},
		{name: "DescribeTable", answer: `{"Table": {"TableName": "t", "TableStatus": "ACTIVE"}}`,
			sdk: func(e string) (any, error) {
				out, err := sdkClient(e).DescribeTable(ctx, &sdk.DescribeTableInput{TableName: aws.String("t")})
				if err != nil {
					return nil, err
				}
				return types.TableDescription{TableName: out.Table.TableName, TableStatus: types.TableStatus(out.Table.TableStatus)}, nil
			},
			ours: func(e string) (any, error) {
				out, err := ourClient(e).DescribeTable(ctx, &dynamodb.DescribeTableInput{TableName: aws.String("t")})
				if err != nil {
					return nil, err
				}
				return *out.Table, nil
			}},
		{name: "UpdateTimeToLive", answer: `{"TimeToLiveSpecification": {"AttributeName": "ttl", "Enabled": true}}`,
			sdk: func(e string) (any, error) {
				out, err := sdkClient(e).UpdateTimeToLive(ctx, &sdk.UpdateTimeToLiveInput{TableName: aws.String("t"),
					TimeToLiveSpecification: &sdktypes.TimeToLiveSpecification{AttributeName: aws.String("ttl"), Enabled: aws.Bool(true)}})
				if err != nil {
					return nil, err
				}
				return types.TimeToLiveSpecification{AttributeName: out.TimeToLiveSpecification.AttributeName, Enabled: out.TimeToLiveSpecification.Enabled}, nil
			},
			ours: func(e string) (any, error) {
				out, err := ourClient(e).UpdateTimeToLive(ctx, &dynamodb.UpdateTimeToLiveInput{TableName: aws.String("t"),
					TimeToLiveSpecification: &types.TimeToLiveSpecification{AttributeName: aws.String("ttl"), Enabled: aws.Bool(true)}})
				if err != nil {
					return nil, err
				}
				return *out.TimeToLiveSpecification, nil
			}},
		{name: "DeleteTable", answer: `{"TableDescription": {"TableName": "t", "TableStatus": "DELETING"}}`,
			sdk: func(e string) (any, error) {
				out, err := sdkClient(e).DeleteTable(ctx, &sdk.DeleteTableInput{TableName: aws.String("t")})
				if err != nil {
					return nil, err
				}
				return types.TableDescription{TableName: out.TableDescription.TableName, TableStatus: types.TableStatus(out.TableDescription.TableStatus)}, nil
			},
			ours: func(e string) (any, error) {
				out, err := ourClient(e).DeleteTable(ctx, &dynamodb.DeleteTableInput{TableName: aws.String("t")})
				if err != nil {
					return nil, err
				}
				return *out.TableDescription, nil
			}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv, got := recorder(t, 200, tt.answer)
			sdkOut, err := tt.sdk(srv.URL)
			if err != nil {
				t.Fatalf("SDK: %v", err)
			}
			ourOut, err := tt.ours(srv.URL)
			if err != nil {
				t.Fatalf("ours: %v", err)
			}
			reqs := got()
			if len(reqs) != 2 {
				t.Fatalf("%d requests, want 2", len(reqs))
			}
			if want := "DynamoDB_20120810." + strings.SplitN(tt.name, ",", 2)[0]; reqs[1].Target != want {
				t.Errorf("X-Amz-Target %q, want %q", reqs[1].Target, want)
			}
			if diff := cmp.Diff(reqs[0], reqs[1]); diff != "" {
				t.Errorf("the request differs from the SDK's (-SDK +ours):\n%s", diff)
			}
			if diff := cmp.Diff(sdkOut, ourOut); diff != "" {
				t.Errorf("the answer read differs from the SDK's (-SDK +ours):\n%s", diff)
			}
		})
	}
}

// wireItem is an item in DynamoDB's JSON, written here by hand from the
// SDK's types (the answers above), so that the decoding is not checked
// against our own encoder.
func wireItem(m map[string]sdktypes.AttributeValue) map[string]any {
	out := map[string]any{}
	for k, v := range m {
		out[k] = wireValue(v)
	}
	return out
}

func wireValue(v sdktypes.AttributeValue) map[string]any {
	b64 := func(b []byte) string { return base64Std(b) }
	switch v := v.(type) {
	case *sdktypes.AttributeValueMemberS:
		return map[string]any{"S": v.Value}
	case *sdktypes.AttributeValueMemberN:
		return map[string]any{"N": v.Value}
	case *sdktypes.AttributeValueMemberB:
		return map[string]any{"B": b64(v.Value)}
	case *sdktypes.AttributeValueMemberBOOL:
		return map[string]any{"BOOL": v.Value}
	case *sdktypes.AttributeValueMemberNULL:
		return map[string]any{"NULL": v.Value}
	case *sdktypes.AttributeValueMemberSS:
		return map[string]any{"SS": v.Value}
	case *sdktypes.AttributeValueMemberNS:
		return map[string]any{"NS": v.Value}
	case *sdktypes.AttributeValueMemberBS:
		l := []string{}
		for _, b := range v.Value {
			l = append(l, b64(b))
		}
		return map[string]any{"BS": l}
	case *sdktypes.AttributeValueMemberL:
		l := []any{}
		for _, e := range v.Value {
			l = append(l, wireValue(e))
		}
		return map[string]any{"L": l}
	case *sdktypes.AttributeValueMemberM:
		return map[string]any{"M": wireItem(v.Value)}
	}
	panic(fmt.Sprintf("%T", v))
}

// TestRefusedBeforeSending: what DynamoDB refuses (an empty set) or cannot
// be written (a nil value) is an error, and nothing is sent.
func TestRefusedBeforeSending(t *testing.T) {
	srv, got := recorder(t, 200, `{}`)
	c := ourClient(srv.URL)
	for name, v := range map[string]types.AttributeValue{
		"empty SS":          &types.AttributeValueMemberSS{},
		"empty NS":          &types.AttributeValueMemberNS{Value: []string{}},
		"empty BS":          &types.AttributeValueMemberBS{},
		"empty SS in a map": &types.AttributeValueMemberM{Value: map[string]types.AttributeValue{"s": &types.AttributeValueMemberSS{}}},
		"nil":               nil,
		"nil in a list":     &types.AttributeValueMemberL{Value: []types.AttributeValue{nil}},
	} {
		_, err := c.PutItem(context.Background(), &dynamodb.PutItemInput{TableName: aws.String("t"),
			Item: map[string]types.AttributeValue{"pk": &types.AttributeValueMemberS{Value: "p"}, "v": v}})
		if err == nil {
			t.Errorf("%s: no error", name)
		}
	}
	if n := len(got()); n != 0 {
		t.Errorf("%d requests sent, want none", n)
	}
}

// noBackoff is the SDK's standard retryer (4 attempts, as the SDK's
// DynamoDB client) without its waits.
func noBackoff() aws.Retryer {
	return retry.NewStandard(func(o *retry.StandardOptions) {
		o.MaxAttempts = 4
		o.Backoff = retry.BackoffDelayerFunc(func(int, error) (time.Duration, error) { return 0, nil })
	})
}

// TestErrorsAsTheSDKReads answers both clients the same refusals and
// compares the errors: the code, the message, the condition failure's
// type, and the attempts (throttling and 5xx retried, 4 in all).
func TestErrorsAsTheSDKReads(t *testing.T) {
	ctx := context.Background()
	tests := []struct {
		name, status, body string
		code, message      string
		attempts           int
		condition          bool
	}{
		{name: "condition", status: "400", body: `{"__type": "com.amazonaws.dynamodb.v20120810#ConditionalCheckFailedException", "message": "The conditional request failed"}`,
			code: "ConditionalCheckFailedException", message: "The conditional request failed", attempts: 1, condition: true},
		{name: "item size", status: "400", body: `{"__type": "com.amazon.coral.validate#ValidationException", "message": "Item size has exceeded the maximum allowed size"}`,
			code: "ValidationException", message: "Item size has exceeded the maximum allowed size", attempts: 1},
		{name: "unknown operation", status: "400", body: `{"__type": "com.amazon.coral.service#UnknownOperationException"}`,
			code: "UnknownOperationException", attempts: 1},
		{name: "missing table", status: "400", body: `{"__type": "com.amazonaws.dynamodb.v20120810#ResourceNotFoundException", "message": "Requested resource not found"}`,
			code: "ResourceNotFoundException", message: "Requested resource not found", attempts: 1},
		{name: "throttled", status: "400", body: `{"__type": "com.amazonaws.dynamodb.v20120810#ProvisionedThroughputExceededException", "message": "slow down"}`,
			code: "ProvisionedThroughputExceededException", message: "slow down", attempts: 4},
		{name: "throttling", status: "400", body: `{"__type": "com.amazonaws.dynamodb.v20120810#ThrottlingException", "message": "Rate of requests exceeds the allowed throughput."}`,
			code: "ThrottlingException", message: "Rate of requests exceeds the allowed throughput.", attempts: 4},
		{name: "internal error", status: "500", body: `{"__type": "com.amazonaws.dynamodb.v20120810#InternalServerError", "message": "oops"}`,
			code: "InternalServerError", message: "oops", attempts: 4},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var status int
			fmt.Sscan(tt.status, &status)
			srv, got := recorder(t, status, tt.body)
			cfg := testConfig()
			cfg.Retryer = noBackoff
			in := map[string]sdktypes.AttributeValue{"pk": &sdktypes.AttributeValueMemberS{Value: "p"}}
			_, sdkErr := sdk.NewFromConfig(cfg, func(o *sdk.Options) { o.BaseEndpoint = aws.String(srv.URL) }).PutItem(ctx, &sdk.PutItemInput{TableName: aws.String("t"), Item: in})
			sdkAttempts := len(got())
			_, ourErr := dynamodb.NewFromConfig(cfg, func(o *dynamodb.Options) { o.BaseEndpoint = aws.String(srv.URL) }).PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String("t"), Item: oursMap(in)})
			ourAttempts := len(got()) - sdkAttempts
			for who, err := range map[string]error{"SDK": sdkErr, "ours": ourErr} {
				ae, ok := errors.AsType[smithy.APIError](err)
				if !ok {
					t.Fatalf("%s: %v is no smithy.APIError", who, err)
				}
				// With no message, the SDK's is "UnknownError".
				if ae.ErrorCode() != tt.code || (ae.ErrorMessage() != tt.message && !(who == "SDK" && tt.message == "")) {
					t.Errorf("%s: code %q message %q, want %q %q", who, ae.ErrorCode(), ae.ErrorMessage(), tt.code, tt.message)
				}
			}
			_, sdkCCF := errors.AsType[*sdktypes.ConditionalCheckFailedException](sdkErr)
			_, ourCCF := errors.AsType[*types.ConditionalCheckFailedException](ourErr)
			if sdkCCF != tt.condition || ourCCF != tt.condition {
				t.Errorf("condition failure: SDK %v, ours %v, want %v", sdkCCF, ourCCF, tt.condition)
			}
			if _, ok := errors.AsType[*awslite.Error](ourErr); !ok {
				t.Errorf("ours: %v is no *awslite.Error", ourErr)
			}
			if sdkAttempts != tt.attempts || ourAttempts != tt.attempts {
				t.Errorf("attempts: SDK %d, ours %d, want %d", sdkAttempts, ourAttempts, tt.attempts)
			}
		})
	}
}

// TestChecksum: an answer whose X-Amz-Crc32 does not match its body is an
// error. (The SDK checks it when the body is closed, after reading it, and
// its GetItem returns what it read.)
func TestChecksum(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("X-Amz-Crc32", "1")
		io.WriteString(w, `{"Item": {"pk": {"S": "p"}}}`)
	}))
	defer srv.Close()
	in := map[string]sdktypes.AttributeValue{"pk": &sdktypes.AttributeValueMemberS{Value: "p"}}
	out, err := ourClient(srv.URL).GetItem(context.Background(), &dynamodb.GetItemInput{TableName: aws.String("t"), Key: oursMap(in)})
	if err == nil {
		t.Errorf("a wrong checksum: %v, want an error", out)
	}
}

func crc32(s string) uint32 { return crc32pkg.ChecksumIEEE([]byte(s)) }

func base64Std(b []byte) string { return base64.StdEncoding.EncodeToString(b) }
