// Package jetstream keeps a store's records in NATS JetStream, for many
// hosts on one cluster: a stream whose subjects are the keys, transactions
// as optimistic concurrency over it (backend.go, commit.go, known.go), a
// hold for the one host that has a store alone (hold.go), and an embedded
// NATS server (node.go). Open (open.go) returns a *store.Store; the engine
// above does not know which backend it has. docs/store.md, "The JetStream
// backend", says how records map to messages.
package jetstream
