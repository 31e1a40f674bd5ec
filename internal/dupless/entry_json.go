package dupless

import (
	"encoding/json"
	"fmt"
	"io/fs"
	"time"
	"unicode/utf8"
)

// Names in JSON (docs/scripting.md): encoding/json turns bytes that are not valid UTF-8
// into U+FFFD, so a script could not address such a file. Every name field X (path,
// symlink, local, dest) therefore gets a sibling X_bytes, the name's exact bytes in
// standard base64, only when the name is not valid UTF-8 (as restic's JSON does).

// RawName is the X_bytes value of the name s: its bytes when they are not valid UTF-8,
// else nil (omitted).
func RawName(s string) []byte {
	if utf8.ValidString(s) {
		return nil
	}
	return []byte(s)
}

// MarshalJSON writes an entry for scripts: its type by name and its mode as Unix
// permission bits in octal ("0644", "4755"), as stat(1) and chmod(1) show them, not Go's
// fs.FileMode number.
func (e Entry) MarshalJSON() ([]byte, error) {
	typ := "file"
	switch {
	case e.IsDir:
		typ = "dir"
	case e.Symlink != "":
		typ = "symlink"
	case e.Mode&fs.ModeNamedPipe != 0:
		typ = "fifo"
	case e.Mode&fs.ModeCharDevice != 0:
		typ = "chardev"
	case e.Mode&fs.ModeDevice != 0:
		typ = "blockdev"
	}
	var mode string
	if e.Err == "" {
		mode = fmt.Sprintf("%04o", unixMode(e.Mode))
	}
	return json.Marshal(struct {
		Path         string    `json:"path"`
		PathBytes    []byte    `json:"path_bytes,omitempty"`
		Type         string    `json:"type"`
		Symlink      string    `json:"symlink,omitempty"`
		SymlinkBytes []byte    `json:"symlink_bytes,omitempty"`
		Size         int64     `json:"size"`
		Mode         string    `json:"mode,omitempty"`
		ModTime      time.Time `json:"mtime"`
		Chunks       int       `json:"chunks,omitempty"`
		Fallback     bool      `json:"fallback,omitempty"`
		Err          string    `json:"error,omitempty"`
	}{e.Path, RawName(e.Path), typ, e.Symlink, RawName(e.Symlink), e.Size, mode, e.ModTime, e.Chunks, e.Fallback, e.Err})
}

// MarshalJSON adds path_bytes to a per-file failure.
func (e FileError) MarshalJSON() ([]byte, error) {
	type plain FileError
	return json.Marshal(struct {
		plain
		PathBytes []byte `json:"path_bytes,omitempty"`
	}{plain(e), RawName(e.Path)})
}

// MarshalJSON adds path_bytes to a file an interrupted run did not store.
func (f StoppedFile) MarshalJSON() ([]byte, error) {
	type plain StoppedFile
	return json.Marshal(struct {
		plain
		PathBytes []byte `json:"path_bytes,omitempty"`
	}{plain(f), RawName(f.Path)})
}

// MarshalJSON adds path_bytes (and a move's from_bytes) to a change.
func (ch Change) MarshalJSON() ([]byte, error) {
	type plain Change
	return json.Marshal(struct {
		plain
		PathBytes []byte `json:"path_bytes,omitempty"`
		FromBytes []byte `json:"from_bytes,omitempty"`
	}{plain(ch), RawName(ch.Path), RawName(ch.From)})
}

// MarshalJSON adds local_bytes and dest_bytes to a planned entry.
func (p Planned) MarshalJSON() ([]byte, error) {
	type plain Planned
	return json.Marshal(struct {
		plain
		LocalBytes []byte `json:"local_bytes,omitempty"`
		DestBytes  []byte `json:"dest_bytes,omitempty"`
	}{plain(p), RawName(p.Local), RawName(p.Dest)})
}

// MarshalJSON adds symlink_bytes to a version.
func (v Version) MarshalJSON() ([]byte, error) {
	type plain Version
	return json.Marshal(struct {
		plain
		SymlinkBytes []byte `json:"symlink_bytes,omitempty"`
	}{plain(v), RawName(v.Symlink)})
}
