package dupless

import (
	"encoding/json"
	"fmt"
	"io/fs"
	"time"
)

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
		Path     string    `json:"path"`
		Type     string    `json:"type"`
		Symlink  string    `json:"symlink,omitempty"`
		Size     int64     `json:"size"`
		Mode     string    `json:"mode,omitempty"`
		ModTime  time.Time `json:"mtime"`
		Chunks   int       `json:"chunks,omitempty"`
		Fallback bool      `json:"fallback,omitempty"`
		Err      string    `json:"error,omitempty"`
	}{e.Path, typ, e.Symlink, e.Size, mode, e.ModTime, e.Chunks, e.Fallback, e.Err})
}
