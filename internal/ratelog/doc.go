// Package ratelog spaces out the log lines of one repeated fault.
//
// A fault that hits every request (a rate-limit store that does not answer, a full write
// buffer, a flood of replayed queries) would write a line per request and bury the rest of
// the log. A Spacer lets one line through per interval and counts the occurrences it held
// back, so the next line can say how many there were:
//
//	var full ratelog.Spacer // the zero value spaces lines by DefaultEvery
//	if ok, held := full.Due(); ok {
//		log.Warn("writes refused", "unlogged_before", held)
//	}
//
// It imports only the standard library.
package ratelog
