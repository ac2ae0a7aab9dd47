// Package types holds the DynamoDB types of package awslite/dynamodb,
// named as aws-sdk-go-v2's service/dynamodb/types names them, so that code
// written against the SDK's subset moves over by its import lines. Only
// what the store uses is here.
package types

import "fmt"

// AttributeValue is one of the AttributeValueMember types: the value of
// an attribute (the JSON {"S": ...}, {"N": ...} and so on).
type AttributeValue interface{ isAttributeValue() }

// AttributeValueMemberB is binary data (base64 on the wire).
type AttributeValueMemberB struct{ Value []byte }

// AttributeValueMemberBOOL is a Boolean.
type AttributeValueMemberBOOL struct{ Value bool }

// AttributeValueMemberBS is a set of binary values; it may not be empty.
type AttributeValueMemberBS struct{ Value [][]byte }

// AttributeValueMemberL is a list of values.
type AttributeValueMemberL struct{ Value []AttributeValue }

// AttributeValueMemberM is a map of values.
type AttributeValueMemberM struct{ Value map[string]AttributeValue }

// AttributeValueMemberN is a number, as its decimal string.
type AttributeValueMemberN struct{ Value string }

// AttributeValueMemberNS is a set of numbers; it may not be empty.
type AttributeValueMemberNS struct{ Value []string }

// AttributeValueMemberNULL is null (Value true).
type AttributeValueMemberNULL struct{ Value bool }

// AttributeValueMemberS is a string.
type AttributeValueMemberS struct{ Value string }

// AttributeValueMemberSS is a set of strings; it may not be empty.
type AttributeValueMemberSS struct{ Value []string }

func (*AttributeValueMemberB) isAttributeValue()    {}
func (*AttributeValueMemberBOOL) isAttributeValue() {}
func (*AttributeValueMemberBS) isAttributeValue()   {}
func (*AttributeValueMemberL) isAttributeValue()    {}
func (*AttributeValueMemberM) isAttributeValue()    {}
func (*AttributeValueMemberN) isAttributeValue()    {}
func (*AttributeValueMemberNS) isAttributeValue()   {}
func (*AttributeValueMemberNULL) isAttributeValue() {}
func (*AttributeValueMemberS) isAttributeValue()    {}
func (*AttributeValueMemberSS) isAttributeValue()   {}

// ReturnConsumedCapacity asks for the capacity a request consumed.
type ReturnConsumedCapacity string

// The values of ReturnConsumedCapacity.
const (
	ReturnConsumedCapacityIndexes ReturnConsumedCapacity = "INDEXES"
	ReturnConsumedCapacityTotal   ReturnConsumedCapacity = "TOTAL"
	ReturnConsumedCapacityNone    ReturnConsumedCapacity = "NONE"
)

// ReturnValue asks a write for the item's attributes.
type ReturnValue string

// The values of ReturnValue.
const (
	ReturnValueNone       ReturnValue = "NONE"
	ReturnValueAllOld     ReturnValue = "ALL_OLD"
	ReturnValueUpdatedOld ReturnValue = "UPDATED_OLD"
	ReturnValueAllNew     ReturnValue = "ALL_NEW"
	ReturnValueUpdatedNew ReturnValue = "UPDATED_NEW"
)

// ConsumedCapacity is the capacity a request consumed, when asked for.
type ConsumedCapacity struct {
	TableName              *string             `json:",omitzero"`
	CapacityUnits          *float64            `json:",omitzero"`
	ReadCapacityUnits      *float64            `json:",omitzero"`
	WriteCapacityUnits     *float64            `json:",omitzero"`
	Table                  *Capacity           `json:",omitzero"`
	GlobalSecondaryIndexes map[string]Capacity `json:",omitzero"`
	LocalSecondaryIndexes  map[string]Capacity `json:",omitzero"`
}

// Capacity is the capacity one table or index consumed.
type Capacity struct {
	CapacityUnits      *float64 `json:",omitzero"`
	ReadCapacityUnits  *float64 `json:",omitzero"`
	WriteCapacityUnits *float64 `json:",omitzero"`
}

// ConditionalCheckFailedException is a write whose condition did not
// hold. (ReturnValuesOnConditionCheckFailure is not supported: the item
// is not returned.)
type ConditionalCheckFailedException struct {
	Message *string
}

func (e *ConditionalCheckFailedException) Error() string {
	return fmt.Sprintf("%s: %s", e.ErrorCode(), e.ErrorMessage())
}

// ErrorCode is ConditionalCheckFailedException.
func (e *ConditionalCheckFailedException) ErrorCode() string {
	return "ConditionalCheckFailedException"
}

// ErrorMessage is the service's message.
func (e *ConditionalCheckFailedException) ErrorMessage() string {
	if e.Message == nil {
		return ""
	}
	return *e.Message
}

// The types below create a table (tests and the CLI; no function does).

// ScalarAttributeType is a key attribute's type.
type ScalarAttributeType string

// The values of ScalarAttributeType.
const (
	ScalarAttributeTypeS ScalarAttributeType = "S"
	ScalarAttributeTypeN ScalarAttributeType = "N"
	ScalarAttributeTypeB ScalarAttributeType = "B"
)

// KeyType is a key attribute's role.
type KeyType string

// The values of KeyType.
const (
	KeyTypeHash  KeyType = "HASH"
	KeyTypeRange KeyType = "RANGE"
)

// ProjectionType is what an index copies of each item.
type ProjectionType string

// The values of ProjectionType.
const (
	ProjectionTypeAll      ProjectionType = "ALL"
	ProjectionTypeKeysOnly ProjectionType = "KEYS_ONLY"
	ProjectionTypeInclude  ProjectionType = "INCLUDE"
)

// BillingMode is how a table is billed.
type BillingMode string

// The values of BillingMode.
const (
	BillingModeProvisioned   BillingMode = "PROVISIONED"
	BillingModePayPerRequest BillingMode = "PAY_PER_REQUEST"
)

// TableStatus is a table's state.
type TableStatus string

// The values of TableStatus.
const (
	TableStatusCreating TableStatus = "CREATING"
	TableStatusUpdating TableStatus = "UPDATING"
	TableStatusDeleting TableStatus = "DELETING"
	TableStatusActive   TableStatus = "ACTIVE"
)

// AttributeDefinition names a key attribute and its type.
type AttributeDefinition struct {
	AttributeName *string             `json:",omitzero"`
	AttributeType ScalarAttributeType `json:",omitzero"`
}

// KeySchemaElement is one attribute of a key.
type KeySchemaElement struct {
	AttributeName *string `json:",omitzero"`
	KeyType       KeyType `json:",omitzero"`
}

// Projection is what an index copies.
type Projection struct {
	NonKeyAttributes []string       `json:",omitzero"`
	ProjectionType   ProjectionType `json:",omitzero"`
}

// GlobalSecondaryIndex is an index of a new table.
type GlobalSecondaryIndex struct {
	IndexName  *string            `json:",omitzero"`
	KeySchema  []KeySchemaElement `json:",omitzero"`
	Projection *Projection        `json:",omitzero"`
}

// TimeToLiveSpecification turns a table's TTL on or off.
type TimeToLiveSpecification struct {
	AttributeName *string `json:",omitzero"`
	Enabled       *bool   `json:",omitzero"`
}

// TableDescription is what DynamoDB tells of a table (the part read here).
type TableDescription struct {
	TableName   *string     `json:",omitzero"`
	TableArn    *string     `json:",omitzero"`
	TableStatus TableStatus `json:",omitzero"`
	ItemCount   *int64      `json:",omitzero"`
}
