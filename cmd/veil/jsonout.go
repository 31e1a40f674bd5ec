package main

import (
	"encoding/json"

	"github.com/spf13/cobra"
	"github.com/veil-project/veil/internal/dupless"
)

// The --json rule, in one place (docs/scripting.md):
//   - stdout carries only results, one JSON value per line;
//   - an error is always one line "veil: ..." on stderr, with or without --json;
//   - with --json, a command that exits non-zero ends stdout with one more line,
//     {"error": "<that line's message>", "exit_code": N}, after whatever results it
//     printed (a put's summary, the entries ls could read), so a script reading only
//     stdout still learns that, and why, the command failed;
//   - a name that is not valid UTF-8 keeps its field (with U+FFFD, for display) and gets a
//     sibling field X_bytes with its exact bytes in base64 (dupless.RawName).
// cat and get SRC - write file content to stdout: they never add a JSON line to it.

// contentOnStdout marks cmd's stdout as file content, never to be followed by JSON.
const contentOnStdout = "veil/stdout-content"

func markContentOnStdout(cmd *cobra.Command) {
	if cmd.Annotations == nil {
		cmd.Annotations = map[string]string{}
	}
	cmd.Annotations[contentOnStdout] = "yes"
}

// wantsJSONError reports whether a failure of cmd ends its stdout with an error object.
func wantsJSONError(cmd *cobra.Command) bool {
	if cmd == nil || cmd.Annotations[contentOnStdout] != "" {
		return false
	}
	f := cmd.Flag("json")
	return f != nil && f.Value.String() == "true"
}

// errorJSON is the last stdout line of a --json command that failed: msg is the text of
// its stderr line without "veil: ".
func errorJSON(msg string, code int) []byte {
	b, _ := json.Marshal(struct {
		Err  string `json:"error"`
		Code int    `json:"exit_code"`
	}{msg, code})
	return append(b, '\n')
}

// names is a JSON object of name fields (key, value, key, value, ...), each with its
// key_bytes sibling when the value is not valid UTF-8.
func names(kv ...string) map[string]any {
	m := make(map[string]any, len(kv))
	for i := 0; i+1 < len(kv); i += 2 {
		m[kv[i]] = kv[i+1]
		if raw := dupless.RawName(kv[i+1]); raw != nil {
			m[kv[i]+"_bytes"] = raw
		}
	}
	return m
}
