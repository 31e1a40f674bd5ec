package pir

import (
	"fmt"
	"math/bits"
)

// Params is the table's geometry: 2^Bits buckets of Slots slots.
type Params struct {
	Bits  int `json:"pir_bits"`
	Slots int `json:"pir_slots"`
}

// Limits on the geometry.
const (
	MinBits, MaxBits = 4, 20 // at 20: 2.7 GB per server with 64 slots; the sync sends 16 MiB of digests
	MaxSlots         = 255
	// DefaultSlots slots per bucket: with at most Slots/2 pairs per bucket on average the
	// fullest of 2^15 buckets overflows with probability about 10^-3 (Poisson tail).
	DefaultSlots   = 64
	pairsPerBucket = 32
)

// DefaultParams is the geometry of a new K-server: 2^12 buckets of 64 slots (10.5 MiB per
// server), sized for up to about 1.3 x 10^5 pairs.
var DefaultParams = Params{Bits: 12, Slots: DefaultSlots}

// ParamsFor sizes a table for about pairs pairs: 32 per bucket on average.
func ParamsFor(pairs int) Params {
	b := bits.Len(uint(max(pairs/pairsPerBucket-1, 0)))
	return Params{Bits: min(max(b, MinBits), MaxBits), Slots: DefaultSlots}
}

// Enabled reports whether p is a table (zero Params: private queries off).
func (p Params) Enabled() bool { return p.Bits != 0 }

// Check validates p.
func (p Params) Check() error {
	if p.Bits < MinBits || p.Bits > MaxBits || p.Slots < 1 || p.Slots > MaxSlots {
		return fmt.Errorf("private-query table of 2^%d buckets x %d slots: want %d..%d bits, 1..%d slots",
			p.Bits, p.Slots, MinBits, MaxBits, MaxSlots)
	}
	return nil
}

// BucketSize is the size of one bucket and of one server's answer.
func (p Params) BucketSize() int { return p.Slots*SlotSize + DigestSize }

// TableBytes is the memory one server's table takes.
func (p Params) TableBytes() int { return p.BucketSize() << p.Bits }
