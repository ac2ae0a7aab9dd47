// Package store defines the records countersign keeps and the Store
// interface its adapters implement: embedded (bbolt, for one machine) and
// dynamostore (DynamoDB). Transitions are conditional writes on a version
// counter, so racing writers never both win; storetest is the contract suite.
package store
