// Package store is the port the records of package countersign are kept
// behind: the Store interface its adapters implement, embedded (bbolt, for
// one machine) and dynamostore (DynamoDB), and the errors they translate
// their own into. Transitions are conditional writes on a version counter,
// so racing writers never both win; storetest is the contract suite.
package store
