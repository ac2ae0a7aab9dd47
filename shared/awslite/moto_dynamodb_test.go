package awslite_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	sdk "github.com/aws/aws-sdk-go-v2/service/dynamodb"
	sdktypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/google/go-cmp/cmp"

	"github.com/countersign/countersign/shared/awslite/dynamodb"
	"github.com/countersign/countersign/shared/awslite/dynamodb/types"
)

// dynamoDBAgainstMoto runs every operation of awslite/dynamodb against
// moto_server (TestAgainstMoto), and reads what it wrote back with the
// SDK's client.
func dynamoDBAgainstMoto(t *testing.T, url string) {
	ctx := context.Background()
	cfg := testConfig()
	c := dynamodb.NewFromConfig(cfg, func(o *dynamodb.Options) { o.BaseEndpoint = aws.String(url) })
	sdkc := sdk.NewFromConfig(cfg, func(o *sdk.Options) { o.BaseEndpoint = aws.String(url) })
	const table = "countersign"
	str := func(v string) types.AttributeValue { return &types.AttributeValueMemberS{Value: v} }
	key := func(pk, sk string) map[string]types.AttributeValue {
		return map[string]types.AttributeValue{"pk": str(pk), "sk": str(sk)}
	}

	_, err := c.CreateTable(ctx, &dynamodb.CreateTableInput{
		TableName:   aws.String(table),
		BillingMode: types.BillingModePayPerRequest,
		AttributeDefinitions: []types.AttributeDefinition{
			{AttributeName: aws.String("pk"), AttributeType: types.ScalarAttributeTypeS},
			{AttributeName: aws.String("sk"), AttributeType: types.ScalarAttributeTypeS},
			{AttributeName: aws.String("gsi1pk"), AttributeType: types.ScalarAttributeTypeS},
		},
		KeySchema: []types.KeySchemaElement{{AttributeName: aws.String("pk"), KeyType: types.KeyTypeHash}, {AttributeName: aws.String("sk"), KeyType: types.KeyTypeRange}},
		GlobalSecondaryIndexes: []types.GlobalSecondaryIndex{{IndexName: aws.String("gsi1"),
			KeySchema:  []types.KeySchemaElement{{AttributeName: aws.String("gsi1pk"), KeyType: types.KeyTypeHash}},
			Projection: &types.Projection{ProjectionType: types.ProjectionTypeKeysOnly}}},
	})
	if err != nil {
		t.Fatalf("create table: %v", err)
	}
	w := dynamodb.NewTableExistsWaiter(c, func(o *dynamodb.TableExistsWaiterOptions) { o.MinDelay, o.MaxDelay = 10*time.Millisecond, time.Second })
	if err := w.Wait(ctx, &dynamodb.DescribeTableInput{TableName: aws.String(table)}, time.Minute); err != nil {
		t.Fatal(err)
	}
	if _, err := c.UpdateTimeToLive(ctx, &dynamodb.UpdateTimeToLiveInput{TableName: aws.String(table),
		TimeToLiveSpecification: &types.TimeToLiveSpecification{AttributeName: aws.String("ttl"), Enabled: aws.Bool(true)}}); err != nil {
		t.Errorf("update TTL: %v", err)
	}
	if ttl, err := sdkc.DescribeTimeToLive(ctx, &sdk.DescribeTimeToLiveInput{TableName: aws.String(table)}); err != nil ||
		ttl.TimeToLiveDescription.TimeToLiveStatus != sdktypes.TimeToLiveStatusEnabled || aws.ToString(ttl.TimeToLiveDescription.AttributeName) != "ttl" {
		t.Errorf("TTL as the SDK reads it: %+v, %v", ttl, err)
	}

	// Every kind of value, written by ours, read back by ours and by the SDK.
	item := key("CRED#c1", "CRED")
	for k, v := range map[string]types.AttributeValue{
		"gsi1pk": str("KEYHASH#ab"),
		"data":   str(`{"id":"c1","note":"é \"q\" \u2028"}`),
		"n":      &types.AttributeValueMemberN{Value: "-12.5"},
		"bin":    &types.AttributeValueMemberB{Value: []byte{0, 0xff, '+'}},
		"t":      &types.AttributeValueMemberBOOL{Value: true},
		"null":   &types.AttributeValueMemberNULL{Value: true},
		"ss":     &types.AttributeValueMemberSS{Value: []string{"a", "b"}},
		"ns":     &types.AttributeValueMemberNS{Value: []string{"1", "2"}},
		"bs":     &types.AttributeValueMemberBS{Value: [][]byte{{1}, {2, 3}}},
		"l":      &types.AttributeValueMemberL{Value: []types.AttributeValue{str("x"), &types.AttributeValueMemberN{Value: "1"}}},
		"m":      &types.AttributeValueMemberM{Value: map[string]types.AttributeValue{"k": str("v"), "in": &types.AttributeValueMemberM{Value: map[string]types.AttributeValue{}}}},
	} {
		item[k] = v
	}
	put, err := c.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(table), Item: item,
		ConditionExpression: aws.String("attribute_not_exists(pk)"), ReturnConsumedCapacity: types.ReturnConsumedCapacityTotal})
	if err != nil {
		t.Fatalf("put: %v", err)
	}
	if put.ConsumedCapacity == nil || aws.ToFloat64(put.ConsumedCapacity.CapacityUnits) <= 0 {
		t.Errorf("put: consumed capacity %+v, want units", put.ConsumedCapacity)
	}
	got, err := c.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String(table), Key: key("CRED#c1", "CRED"), ConsistentRead: aws.Bool(true)})
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(item, got.Item); diff != "" {
		t.Errorf("the item read back differs (-written +read):\n%s", diff)
	}
	sdkGot, err := sdkc.GetItem(ctx, &sdk.GetItemInput{TableName: aws.String(table), Key: map[string]sdktypes.AttributeValue{
		"pk": &sdktypes.AttributeValueMemberS{Value: "CRED#c1"}, "sk": &sdktypes.AttributeValueMemberS{Value: "CRED"}}})
	if err != nil || len(sdkGot.Item) != len(item) {
		t.Fatalf("the SDK reads %d attributes, %v; want %d", len(sdkGot.Item), err, len(item))
	}
	if v, ok := sdkGot.Item["bin"].(*sdktypes.AttributeValueMemberB); !ok || string(v.Value) != "\x00\xff+" {
		t.Errorf("the SDK reads bin as %#v", sdkGot.Item["bin"])
	}
	if v, ok := sdkGot.Item["n"].(*sdktypes.AttributeValueMemberN); !ok || v.Value != "-12.5" {
		t.Errorf("the SDK reads n as %#v", sdkGot.Item["n"])
	}
	if got, _ := c.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String(table), Key: key("CRED#none", "CRED")}); got == nil || got.Item != nil {
		t.Errorf("a missing item: %+v, want no item", got)
	}

	// A failed condition is the typed error.
	_, err = c.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(table), Item: key("CRED#c1", "CRED"), ConditionExpression: aws.String("attribute_not_exists(pk)")})
	if _, ok := errors.AsType[*types.ConditionalCheckFailedException](err); !ok {
		t.Errorf("put over an existing item: %v, want ConditionalCheckFailedException", err)
	}

	// UpdateItem's counter, as AddCount uses it.
	for want := 1; want <= 2; want++ {
		up, err := c.UpdateItem(ctx, &dynamodb.UpdateItemInput{TableName: aws.String(table), Key: key("COUNT#k", "COUNT"),
			UpdateExpression: aws.String("ADD #n :one"), ExpressionAttributeNames: map[string]string{"#n": "n"},
			ExpressionAttributeValues: map[string]types.AttributeValue{":one": &types.AttributeValueMemberN{Value: "1"}},
			ReturnValues:              types.ReturnValueUpdatedNew})
		if err != nil {
			t.Fatal(err)
		}
		if n, ok := up.Attributes["n"].(*types.AttributeValueMemberN); !ok || n.Value != string(rune('0'+want)) {
			t.Errorf("count = %#v, want %d", up.Attributes["n"], want)
		}
	}

	// Query, a page at a time, forward and back, on the table and the index.
	for _, sk := range []string{"a", "b", "c"} {
		it := key("LIST", sk)
		it["gsi1pk"] = str("G")
		if _, err := c.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(table), Item: it}); err != nil {
			t.Fatal(err)
		}
	}
	for _, tt := range []struct {
		index   string
		forward bool
		want    string
	}{{"", true, "abc"}, {"", false, "cba"}, {"gsi1", true, "abc"}} {
		in := &dynamodb.QueryInput{TableName: aws.String(table), KeyConditionExpression: aws.String("pk = :pk"),
			ExpressionAttributeValues: map[string]types.AttributeValue{":pk": str("LIST")}, Limit: aws.Int32(1), ScanIndexForward: aws.Bool(tt.forward)}
		if tt.index != "" {
			in.IndexName, in.KeyConditionExpression = aws.String(tt.index), aws.String("gsi1pk = :pk")
			in.ExpressionAttributeValues = map[string]types.AttributeValue{":pk": str("G")}
		}
		var order string
		for pages := dynamodb.NewQueryPaginator(c, in); pages.HasMorePages(); {
			page, err := pages.NextPage(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if len(page.Items) > 1 {
				t.Fatalf("a page of %d items, want at most 1", len(page.Items))
			}
			for _, it := range page.Items {
				order += it["sk"].(*types.AttributeValueMemberS).Value
			}
			if len(order) > 5 {
				t.Fatal("more pages than items")
			}
		}
		if order != tt.want {
			t.Errorf("query %q forward %v: %q, want %q", tt.index, tt.forward, order, tt.want)
		}
	}

	// DeleteItem returns the old item; a second delete finds none.
	del, err := c.DeleteItem(ctx, &dynamodb.DeleteItemInput{TableName: aws.String(table), Key: key("LIST", "a"), ReturnValues: types.ReturnValueAllOld})
	if err != nil || stringAttr(del.Attributes, "gsi1pk") != "G" {
		t.Errorf("delete: %+v, %v", del, err)
	}
	_, err = c.DeleteItem(ctx, &dynamodb.DeleteItemInput{TableName: aws.String(table), Key: key("LIST", "a"), ConditionExpression: aws.String("attribute_exists(pk)")})
	if _, ok := errors.AsType[*types.ConditionalCheckFailedException](err); !ok {
		t.Errorf("delete a deleted item on condition: %v, want ConditionalCheckFailedException", err)
	}

	// DynamoDB's refusals keep their codes.
	big := key("BIG", "BIG")
	big["data"] = str(strings.Repeat("x", 410<<10))
	if _, err := c.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(table), Item: big}); apiCode(err) != "ValidationException" ||
		!strings.Contains(strings.ToLower(err.Error()), "item size") {
		t.Errorf("an item over 400 KB: %v, want ValidationException about the item size", err)
	}
	if _, err := c.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String("none"), Key: key("a", "b")}); apiCode(err) != "ResourceNotFoundException" {
		t.Errorf("a missing table: %v, want ResourceNotFoundException", err)
	}
	if _, err := c.DeleteTable(ctx, &dynamodb.DeleteTableInput{TableName: aws.String(table)}); err != nil {
		t.Errorf("delete table: %v", err)
	}
}

func stringAttr(m map[string]types.AttributeValue, name string) string {
	if v, ok := m[name].(*types.AttributeValueMemberS); ok {
		return v.Value
	}
	return ""
}
