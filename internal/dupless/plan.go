package dupless

import "io/fs"

// Planned is one entry put would store: the local path, where it goes, what it is.
type Planned struct {
	Local string `json:"local"`
	Dest  string `json:"dest"`
	Type  string `json:"type"` // file, dir, symlink, or special (a FIFO or device)
	Size  int64  `json:"size"`
}

// Plan lists what Put(locals, dest) would store, after Options.Exclude, without
// contacting the storage service or the key server and without reading any file
// (put --dry-run). Entries put would skip as unchanged are listed too. The summary
// counts them (Files, Dirs, Symlinks, Bytes, Excluded) and lists unreadable paths.
func (c *Client) Plan(locals []string, dest string) ([]Planned, *Summary, error) {
	sum := &Summary{Fallback: map[string]int{}}
	tasks, _, err := c.scan(locals, cleanPath(dest), sum, nil)
	if err != nil {
		return nil, sum, err
	}
	out := make([]Planned, 0, len(tasks))
	for _, t := range tasks {
		p := Planned{Local: t.local, Dest: t.dest}
		switch m := t.info.Mode(); {
		case m.IsRegular():
			p.Type, p.Size = "file", t.info.Size()
			sum.Files++
			sum.Bytes += p.Size
		case m.IsDir():
			p.Type = "dir"
			sum.Dirs++
		case m&fs.ModeSymlink != 0:
			p.Type = "symlink"
			sum.Symlinks++
		default:
			p.Type = "special"
		}
		out = append(out, p)
	}
	return out, sum, nil
}
