package batch

import "testing"

// A value's buffer taken from partBuffers holds what was asked, and one
// given back is taken again by a value that asks no more than its class
// holds, so that a run's values recycle each other's buffers.
func TestPartBuffersRecycle(t *testing.T) {
	for _, want := range []int{0, 1, minPart, minPart + 1, 3 * minPart, minPart << (partClasses - 1), minPart<<partClasses + 5} {
		b := takePartBuffer(want)
		if len(b) != 0 || cap(b) < want || cap(b) < minPart {
			t.Fatalf("takePartBuffer(%d): len %d cap %d", want, len(b), cap(b))
		}
		putPartBuffer(b)
		again := takePartBuffer(min(want, cap(b)))
		if want <= minPart<<(partClasses-1) && &again[:1][0] != &b[:1][0] {
			t.Errorf("takePartBuffer(%d) after a buffer of %d bytes was given back: another buffer", want, cap(b))
		}
		if cap(again) < want {
			t.Fatalf("takePartBuffer(%d) gave back %d bytes", want, cap(again))
		}
	}
	for n, c := range map[int]int{0: 0, minPart: 0, minPart + 1: 1, 2 * minPart: 1, 5 * minPart: 3, minPart<<partClasses + 1: partClasses} {
		if got := partClass(n); got != c {
			t.Errorf("partClass(%d) = %d, want %d", n, got, c)
		}
	}
}

// A value's accumulator grows its buffer through reserve, keeping the
// records it holds, and never holds less room than a record asks.
func TestReserveKeepsTheRecords(t *testing.T) {
	a := &Accumulator{value: true}
	a.buf = append(a.buf, "header"...)
	for i := 0; i < 200; i++ {
		a.reserve(4096)
		if cap(a.buf)-len(a.buf) < 4096 {
			t.Fatalf("reserve(4096) left %d bytes of room", cap(a.buf)-len(a.buf))
		}
		a.buf = append(a.buf, make([]byte, 4096)...)
		a.buf[len(a.buf)-1] = byte(i)
	}
	if string(a.buf[:6]) != "header" || a.buf[6+4096*100-1] != 99 {
		t.Fatal("reserve lost the bytes the buffer held")
	}
}
