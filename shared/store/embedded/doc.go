// Package embedded is the store.Store adapter for one machine: a bbolt file.
//
// Each record type has its own bucket, every bucket name starts with
// "store_" (the local workflow engine keeps its own buckets in the same file,
// see Store.DB), and records are stored as JSON. Every conditional write
// reads and writes in one bbolt read-write transaction, and bbolt runs one
// such transaction at a time, so a compare-and-swap cannot interleave with
// another writer.
package embedded
