// objects.go holds the runtime objects: the observable plan, action and
// result state of a run, each with a stable id, carried as events and shown
// in `runehost inspect`'s work pane. No reasoning rides on them: only what
// was admitted, run, observed, verified or concluded.

package events

import "fmt"

// Block is a named part of a model's context and its size in tokens.
type Block struct {
	Name   string `cbor:"1,keyasint" json:"name"`
	Tokens int64  `cbor:"2,keyasint" json:"tokens"`
}

// MemoryQuery is one assembly of a model's context for model.chat: the
// blocks (messages) admitted and those dropped to fit its budget.
type MemoryQuery struct {
	QueryID      string  `cbor:"1,keyasint" json:"queryId"`
	Admitted     []Block `cbor:"2,keyasint" json:"admitted"`
	Dropped      []Block `cbor:"3,keyasint,omitempty" json:"dropped"`
	MemoryTokens int64   `cbor:"4,keyasint" json:"memoryTokens"`
}

// Kinds of Observation.
const (
	ObsToolResult = "tool_result"
	ObsApproval   = "approval"
	ObsCompaction = "compaction"
	ObsDegraded   = "degraded"
	ObsNote       = "note"
)

// Observation is an observable runtime event: one line, and a bounded detail.
type Observation struct {
	ObservationID string `cbor:"1,keyasint" json:"observationId"`
	Kind          string `cbor:"2,keyasint" json:"kind"`
	Summary       string `cbor:"3,keyasint" json:"summary"`
	Detail        string `cbor:"4,keyasint,omitempty" json:"detail,omitempty"` // DetailCap
}

// Methods of verification. There is no "none": without objective evidence
// there is no VerificationResult at all.
const (
	MethodExitCode = "exit_code"
	MethodTest     = "test"
)

// VerificationResult is an objective check of a run's outcome, from what the
// run's tools did, never from what the prog or a model says of itself.
type VerificationResult struct {
	VerificationID string `cbor:"1,keyasint" json:"verificationId"`
	Method         string `cbor:"2,keyasint" json:"method"`
	Passed         bool   `cbor:"3,keyasint" json:"passed"`
	Evidence       string `cbor:"4,keyasint,omitempty" json:"evidence,omitempty"`
}

// Statuses of an Outcome.
const (
	OutcomeCompleted  = "completed"
	OutcomeFailed     = "failed"
	OutcomeSuperseded = "superseded" // its result was stale: the prog moved on
	OutcomeCancelled  = "cancelled"
)

// Outcome is the run's final, classified outcome. VerificationID links the
// verification only when the run completed and the verification passed.
type Outcome struct {
	OutcomeID      string   `cbor:"1,keyasint" json:"outcomeId"`
	Status         string   `cbor:"2,keyasint" json:"status"`
	VerificationID string   `cbor:"3,keyasint,omitempty" json:"verificationId"`
	Degraded       []string `cbor:"4,keyasint,omitempty" json:"degraded,omitempty"`
}

// Stable ids: the same run and act always give the same id, so a replayed or
// re-read object is the same object.

// ObservationID names the observation of an act.
func ObservationID(run string, ordinal uint64) string { return fmt.Sprintf("obs:%s#%d", run, ordinal) }

// QueryID names the memory query of a model.chat act.
func QueryID(run string, ordinal uint64) string { return fmt.Sprintf("mq:%s#%d", run, ordinal) }

// VerificationID names a run's verification.
func VerificationID(run string) string { return "ver:" + run }

// OutcomeID names a run's outcome.
func OutcomeID(run string) string { return "out:" + run }

// CallID names an act: its operation id.
func CallID(run string, ordinal uint64) string { return fmt.Sprintf("%s#%d", run, ordinal) }

// Verify decides a run's verification from its tool results, by the rules:
// the method is "test" when a test tool completed successfully, else
// "exit_code" when any tool.run completed with exit 0; with neither there is
// no verification (nil). Passed is the run's success and no failed act.
func Verify(run string, succeeded bool, results []ToolResult, isTest func(ToolResult) bool) *VerificationResult {
	method, evidence := "", ""
	failed := 0
	for _, r := range results {
		if !r.OK {
			failed++
			continue
		}
		if r.ExitCode == nil || *r.ExitCode != 0 {
			continue
		}
		if isTest != nil && isTest(r) {
			method, evidence = MethodTest, fmt.Sprintf("%s %s exited 0", r.Tool, r.CallID)
		} else if method == "" {
			method, evidence = MethodExitCode, fmt.Sprintf("%s %s exited 0", r.Tool, r.CallID)
		}
	}
	if method == "" {
		return nil
	}
	if failed > 0 {
		evidence += fmt.Sprintf("; %d act(s) failed", failed)
	}
	return &VerificationResult{VerificationID: VerificationID(run), Method: method, Passed: succeeded && failed == 0, Evidence: Cap(evidence, DetailCap)}
}

// Conclude builds a run's outcome, linked to its verification only when the
// run completed and the verification passed.
func Conclude(run, status string, v *VerificationResult, degraded []string) *Outcome {
	o := &Outcome{OutcomeID: OutcomeID(run), Status: status, Degraded: degraded}
	if v != nil && v.Passed && status == OutcomeCompleted {
		o.VerificationID = v.VerificationID
	}
	return o
}
