// Package acts holds the act adapters, one package per family, and
// Register, which gives an engine all of them. Each adapter declares its
// limits and whether it can reconcile an attempt after a crash, checks the
// concrete target of each act against the grants the ward read at the
// attempt, and does nothing without one.
package acts
