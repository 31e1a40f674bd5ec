// Package osbench reproduces the ObliviSync paper's experiments (Figs. 4-7) on veil's
// engine, with epochs driven by Sync rather than a clock, plus the writer's CPU cost per
// synced MB and the sustained write speed through a FUSE mount. Results are JSON-able
// rows; printing is the caller's job. It must not import cmd.
package osbench
