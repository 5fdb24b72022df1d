// tokens.go holds model-token accounting: the adapters whose acts spend
// tokens, and the invocation's token allowance beside its step allowance.

package host

// Metered is an adapter whose acts spend model tokens from the invocation's
// token allowance. Reserve says, before the act is attempted, the most it
// can spend (its prompt as estimated, and its max_tokens, which the adapter
// sends so the server keeps to it); an act that would exceed what is left
// is refused with a limit error before anything is sent. Spent says, from
// the act's reply (a decoded data value), what it did spend (its usage).
type Metered interface {
	Adapter
	Reserve(op *Operation) (uint64, error)
	Spent(reply any) uint64
}
