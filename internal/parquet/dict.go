package parquet

import (
	"bytes"
	"hash/maphash"
)

// hashSeed only shapes the hash table's layout; entry numbers follow
// insertion order, so output bytes do not depend on it.
var hashSeed = maphash.MakeSeed()

// dictionary maps values (their PLAIN bytes without a length prefix) to
// entry numbers in first-insertion order. Entries live back to back in one
// arena, so inserting never allocates once the buffers have grown.
type dictionary struct {
	data  []byte
	ends  []uint32 // ends[i] is where entry i ends in data
	slots []int32  // open addressing, linear probing: entry+1, 0 = empty
	last  int32    // entry of the previous insert, -1 if none (repeats are common)
}

func (d *dictionary) reset() {
	d.data = d.data[:0]
	d.ends = d.ends[:0]
	clear(d.slots)
	d.last = -1
}

func (d *dictionary) len() int { return len(d.ends) }

func (d *dictionary) entry(i int) []byte {
	start := uint32(0)
	if i > 0 {
		start = d.ends[i-1]
	}
	return d.data[start:d.ends[i]]
}

// insert returns key's entry number, adding it if new.
func (d *dictionary) insert(key []byte) uint32 {
	if d.last >= 0 && int(d.last) < len(d.ends) && bytes.Equal(d.entry(int(d.last)), key) {
		return uint32(d.last)
	}
	if 2*(len(d.ends)+1) > len(d.slots) {
		d.rehash()
	}
	mask := uint64(len(d.slots) - 1)
	n := int32(len(d.ends))
	for i := maphash.Bytes(hashSeed, key) & mask; ; i = (i + 1) & mask {
		s := d.slots[i]
		// A slot naming an entry at or past n was left by a rolled-back
		// record (truncate): it counts as empty.
		if s == 0 || s-1 >= n {
			d.slots[i] = n + 1
			d.data = append(d.data, key...)
			d.ends = append(d.ends, uint32(len(d.data)))
			d.last = n
			return uint32(n)
		}
		if bytes.Equal(d.entry(int(s-1)), key) {
			d.last = s - 1
			return uint32(s - 1)
		}
	}
}

func (d *dictionary) rehash() {
	size := max(1024, 2*len(d.slots))
	if cap(d.slots) >= size {
		d.slots = d.slots[:size]
		clear(d.slots)
	} else {
		d.slots = make([]int32, size)
	}
	mask := uint64(size - 1)
	for e := range d.ends {
		i := maphash.Bytes(hashSeed, d.entry(e)) & mask
		for d.slots[i] != 0 {
			i = (i + 1) & mask
		}
		d.slots[i] = int32(e + 1)
	}
}

// truncate forgets the entries from n on (a rejected record's values).
func (d *dictionary) truncate(n int) {
	if n >= len(d.ends) {
		return
	}
	end := uint32(0)
	if n > 0 {
		end = d.ends[n-1]
	}
	d.data = d.data[:end]
	d.ends = d.ends[:n]
	d.last = -1
}
