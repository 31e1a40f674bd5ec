// Package segment is the layout of a veil file stored over several Metal file ids
// (docs/formats/metal-segment.md): the client cuts a file into segments of exactly one
// block each, every segment carrying a 33-byte header (version, a nonce drawn fresh for
// each write, its index, the segment count and the file's length), and checks on reading
// that every segment belongs to the same write, in order, so a mix of old and new segments
// after an interrupted write, or a segment of another file, is refused rather than returned.
//
// It is a pure format: no I/O, no randomness of its own. It must not import any other veil
// package.
package segment
