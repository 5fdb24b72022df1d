// tutorial.go holds the script of the stand-in for a model that
// docs/tutorial.md's agent runs against offline (cmd/devmodel).

package modeltest

// Tutorial answers examples/agent.rune as docs/tutorial.md shows, turn by
// turn: count the lines of the examples' README and find the ones about
// models (two tools at once), try to read a file the tutorial's grants do
// not cover, answer.
var Tutorial = []Reply{
	{Content: "I'll count the lines and find the ones about models.", ToolCalls: []ToolCall{
		{ID: "call_1", Name: "wc", Arguments: `{"file": "examples/README.md"}`},
		{ID: "call_2", Name: "grep", Arguments: `{"pattern": "model", "file": "examples/README.md"}`},
	}},
	{ToolCalls: []ToolCall{{ID: "call_3", Name: "read", Arguments: `{"path": "docs/acts.md"}`}}},
	{Content: "examples/README.md has 47 lines. Two examples call a model: agent.rune, and summarise.rune when asked to (ask_model)."},
}
