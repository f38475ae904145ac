package vsr

import (
	"fmt"
	"strconv"
	"strings"
)

// Version is a packed protocol version: major<<20 | minor<<10 | patch.
type Version uint32

// Pack packs a version; each part must be below 1024.
func Pack(major, minor, patch uint32) Version {
	return Version(major&0x3ff<<20 | minor&0x3ff<<10 | patch&0x3ff)
}

// Major, Minor and Patch unpack v.
func (v Version) Major() uint32 { return uint32(v) >> 20 & 0x3ff }
func (v Version) Minor() uint32 { return uint32(v) >> 10 & 0x3ff }
func (v Version) Patch() uint32 { return uint32(v) & 0x3ff }

func (v Version) String() string { return fmt.Sprintf("%d.%d.%d", v.Major(), v.Minor(), v.Patch()) }

// ParseVersion reads "major.minor.patch".
func ParseVersion(s string) (Version, error) {
	parts := strings.Split(s, ".")
	if len(parts) != 3 {
		return 0, fmt.Errorf("protocol version %q: want major.minor.patch", s)
	}
	var n [3]uint32
	for i, p := range parts {
		v, err := strconv.ParseUint(p, 10, 10)
		if err != nil {
			return 0, fmt.Errorf("protocol version %q: part %q is not a number below 1024", s, p)
		}
		n[i] = uint32(v)
	}
	return Pack(n[0], n[1], n[2]), nil
}

// Dialect is the wire protocol a connection speaks: it decides the
// layouts that differ between Iggy 0.9 and 0.10.
type Dialect uint8

// The two VSR protocols.
const (
	// V011 is binary protocol 0.11.0, spoken by Iggy server 0.9.
	V011 Dialect = 1
	// V012 is binary protocol 0.12.0, spoken by Iggy server 0.10.
	V012 Dialect = 2
)

// Version is the protocol version a client of d announces at login.
func (d Dialect) Version() Version {
	if d >= V012 {
		return Pack(0, 12, 0)
	}
	return Pack(0, 11, 0)
}

// Server is the Iggy server release that speaks d.
func (d Dialect) Server() string {
	if d >= V012 {
		return "0.10"
	}
	return "0.9"
}

func (d Dialect) String() string {
	return fmt.Sprintf("Iggy %s (protocol %s)", d.Server(), d.Version())
}

// DialectOf is the dialect whose protocol version is v (major.minor).
func DialectOf(v Version) (Dialect, bool) {
	switch {
	case v.Major() == 0 && v.Minor() == 11:
		return V011, true
	case v.Major() == 0 && v.Minor() == 12:
		return V012, true
	}
	return 0, false
}

// Compatible applies a server's login gate to a client's version. A 0.11
// server accepts clients at least its version with patch zeroed and of no
// higher major.minor; a 0.12 server accepts exactly [min, max].
func Compatible(server Dialect, serverMin, serverMax, client Version) bool {
	if server >= V012 {
		return client >= serverMin && client <= serverMax
	}
	floor := Pack(serverMax.Major(), serverMax.Minor(), 0)
	return client >= floor && client>>10 <= serverMax>>10
}
