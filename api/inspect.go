// inspect.go holds Inspection: an invocation's records as inspect shows
// them (GET /v1/invocations/{id}).

package api

import "encoding/json"

// Inspection is an invocation's records. Its fields but Text are in the
// order of their JSON keys, sorted, so that `runehost inspect --json`
// prints the same bytes it printed when it marshalled a map.
type Inspection struct {
	Acts             []Act            `json:"acts"`                        // null when it has none
	AdmittedRevision *uint64          `json:"admitted_revision,omitempty"` // absent when its record is damaged
	Allowance        Allowance        `json:"allowance"`
	Checkpoint       *CheckpointInfo  `json:"checkpoint,omitempty"` // absent when unreadable
	Children         *uint64          `json:"children_unsettled,omitempty"`
	Damage           []string         `json:"damage,omitempty"` // the records that could not be read, each with why
	Depth            *uint64          `json:"depth,omitempty"`
	Error            *InspectionError `json:"error,omitempty"`
	Invocation       string           `json:"invocation"`
	// Parent, Depth and Children are all given for a child or a parent
	// with children unsettled, and none otherwise.
	Parent       *string         `json:"parent,omitempty"`
	Paused       string          `json:"paused,omitempty"`
	Prog         *string         `json:"prog,omitempty"` // the prog's record; absent when unreadable
	ProgRevision *uint64         `json:"prog_revision,omitempty"`
	Result       json.RawMessage `json:"result,omitempty"`
	Status       string          `json:"status"`           // persisted, or damaged
	Tokens       *Allowance      `json:"tokens,omitempty"` // model tokens; absent when unreadable

	// Text is what the text form shows besides, redacted for a person; a
	// client prints the JSON form without it.
	Text *InspectionText `json:"text,omitempty"`
}

// Allowance is an invocation's steps, or its model tokens.
type Allowance struct {
	Charged uint64 `json:"charged"`
	Held    uint64 `json:"held"`
	Lent    uint64 `json:"lent"`
	Limit   uint64 `json:"limit"`
}

// CheckpointInfo is a stored checkpoint's header.
type CheckpointInfo struct {
	Format    uint64 `json:"format"`
	Program   string `json:"program"` // the source's sha256, in hex
	Semantics uint64 `json:"semantics"`
	Status    string `json:"status"`
	Used      uint64 `json:"used"`
}

// InspectionError is an invocation's uncaught error, as stored.
type InspectionError struct {
	Kind  string   `json:"kind"`
	Msg   string   `json:"msg"`
	Pos   string   `json:"pos,omitempty"`   // line:col where it was raised
	Trace []string `json:"trace,omitempty"` // the Rune backtrace, innermost call first
}

// InspectionText is the part of an inspection only its text form shows.
type InspectionText struct {
	Prog       string    `json:"prog,omitempty"`        // the prog it was admitted as
	Damage     []string  `json:"damage,omitempty"`      // Damage, redacted
	Result     string    `json:"result,omitempty"`      // Result, redacted
	Acts       []string  `json:"acts,omitempty"`        // one line an act, redacted and capped
	Work       []Section `json:"work,omitempty"`        // the work pane of its run's objects, newest first
	WorkDamage string    `json:"work_damage,omitempty"` // why the run log is shown no further
}

// Section is a section of the work pane.
type Section struct {
	Title string   `json:"title"`
	Lines []string `json:"lines"`
}
