// Package dynamostore is the store.Store adapter for DynamoDB (aws-sdk-go-v2).
//
// All records live in one table (see CreateTable for its schema):
//
//	record        pk                 sk          gsi1pk           gsi1sk
//	credential    CRED#<id>          CRED        KEYHASH#<hash>   CRED#<id>
//	confirmation  CONF#<id>          CONF        -                -          as created, written once
//	  its state   CONF#<id>          STATE       -                -          rewritten by each transition
//	  task token  CONF#<id>          TOKEN       -                -          written by notify, read by approve
//	idempotency   IDEM#<credential>  KEY#<key>   -                -
//	review        REVIEW#<id>        REVIEW      REVIEWS          <created_at>#<id>
//	script run    SCRIPT#<id>        RUN         -                -
//	script call   SCRIPT#<id>        CALL#<index, 8 digits>  -    -
//	script part   SCRIPT#<id>        PART#<key>  -                -
//
// Each item holds the record as JSON in "data" (so both adapters store the
// same shape) beside the attributes that conditions and indexes read:
// "version" (confirmations, idempotency, script runs and calls),
// "expires_at" (idempotency, unix nanoseconds), "ttl" (unix seconds, on
// confirmations, reviews, idempotency and script records; the table's TTL
// attribute), and "last_client" (a credential's last client as JSON, so
// SetLastClient is one UpdateItem). A script part holds its bytes in the
// binary attribute "bin" instead of JSON, so a part may fill most of an
// item; a script's calls and parts are read with consistent queries on its
// partition.
//
// A confirmation's transitions write only its STATE item (see confstate.go):
// what was fixed at creation (the calls, their arguments and bodies, the
// reason) and the task token are never written again, so a transition
// costs one write unit whatever the call held. GetConfirmation reads CONF
// and STATE with one consistent Query.
//
// Creates are PutItem with attribute_not_exists(pk); updates are PutItem with
// version = :v (a confirmation's state: UpdateItem with version = :v after
// its first transition); an idempotency create may also replace an expired record
// (attribute_not_exists(pk) OR expires_at <= :now). A failed condition
// (ConditionalCheckFailedException) becomes store.ErrConflict here, at the
// edge, or store.ErrNotFound when a consistent read shows the record is gone.
//
// Key lookup goes through the global secondary index gsi1 rather than a
// second item keyed by the hash: keeping a second item in step needs
// TransactWriteItems (which dynalite, the test server, does not implement),
// while the index follows every PutCredential by itself, including a key
// rotation. A GSI is eventually consistent, so CredentialByKeyHash re-reads
// the credential with a consistent GetItem and checks its key hash: a rotated
// key stops working at once, and a brand-new key may be refused for the
// moment the index lags (it fails closed). The same index, under one
// partition value, keeps the review queue in creation order.
package dynamostore
