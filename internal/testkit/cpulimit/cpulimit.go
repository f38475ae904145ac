// Package cpulimit runs processes under a CPU quota (a Linux cgroup), the
// way Lambda gives a function CPU in proportion to its memory; for tests
// and the sizing script, never for the product.
package cpulimit

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
)

// FullCPUMB is the memory size at which Lambda gives a function one full
// vCPU; below it the share is proportional (AWS Lambda developer guide,
// "Memory and computing power").
const FullCPUMB = 1769

// LambdaShare is the fraction of one CPU a function of memoryMB gets.
func LambdaShare(memoryMB int) float64 { return float64(memoryMB) / FullCPUMB }

// ErrUnsupported: no writable cgroup CPU controller here (not Linux, not
// root, or a container without it).
var ErrUnsupported = errors.New("cpulimit: no writable cgroup CPU controller")

// period is the CFS period; the quota is share × period.
const period = 100000 // µs

// Group is one cgroup with a CPU quota.
type Group struct {
	dir   string
	v2    bool
	Share float64
}

// roots are where the CPU controller may be mounted: cgroup v2's unified
// hierarchy, or v1's cpu (or cpu,cpuacct) hierarchy.
var roots = []struct {
	dir string
	v2  bool
}{{"/sys/fs/cgroup", true}, {"/sys/fs/cgroup/cpu", false}, {"/sys/fs/cgroup/cpu,cpuacct", false}}

// New creates the cgroup name with a quota of share of one CPU (0 < share ≤ 64).
func New(name string, share float64) (*Group, error) {
	if share <= 0 || share > 64 {
		return nil, fmt.Errorf("cpulimit: share %v is outside (0, 64]", share)
	}
	if strings.ContainsAny(name, "/.") || name == "" {
		return nil, fmt.Errorf("cpulimit: group name %q must be a plain name", name)
	}
	quota := int(share * period)
	for _, r := range roots {
		if !usable(r.dir, r.v2) {
			continue
		}
		g := &Group{dir: filepath.Join(r.dir, name), v2: r.v2, Share: share}
		if err := os.Mkdir(g.dir, 0o755); err != nil && !errors.Is(err, os.ErrExist) {
			continue
		}
		var err error
		if r.v2 {
			err = write(g.dir, "cpu.max", fmt.Sprintf("%d %d", quota, period))
		} else {
			err = errors.Join(write(g.dir, "cpu.cfs_period_us", strconv.Itoa(period)), write(g.dir, "cpu.cfs_quota_us", strconv.Itoa(quota)))
		}
		if err != nil {
			os.Remove(g.dir)
			continue
		}
		return g, nil
	}
	return nil, ErrUnsupported
}

func usable(dir string, v2 bool) bool {
	if v2 {
		b, err := os.ReadFile(filepath.Join(dir, "cgroup.subtree_control"))
		return err == nil && strings.Contains(string(b), "cpu")
	}
	_, err := os.Stat(filepath.Join(dir, "cpu.cfs_quota_us"))
	return err == nil
}

func write(dir, file, v string) error {
	return os.WriteFile(filepath.Join(dir, file), []byte(v), 0o644)
}

// Command returns cmd's program and arguments wrapped so that the process
// enters the group before it runs (its children stay in it too).
func (g *Group) Command(name string, args ...string) *exec.Cmd {
	script := `echo $$ > "$CPULIMIT_PROCS" && exec "$0" "$@"`
	cmd := exec.Command("/bin/sh", append([]string{"-c", script, name}, args...)...)
	cmd.Env = append(os.Environ(), "CPULIMIT_PROCS="+filepath.Join(g.dir, "cgroup.procs"))
	return cmd
}

// Throttled reports how often the kernel held the group back for its quota.
func (g *Group) Throttled() (int64, error) {
	b, err := os.ReadFile(filepath.Join(g.dir, "cpu.stat"))
	if err != nil {
		return 0, err
	}
	for _, line := range strings.Split(string(b), "\n") {
		if k, v, ok := strings.Cut(line, " "); ok && k == "nr_throttled" {
			return strconv.ParseInt(strings.TrimSpace(v), 10, 64)
		}
	}
	return 0, errors.New("cpulimit: cpu.stat has no nr_throttled")
}

// Close removes the group; its processes must have exited.
func (g *Group) Close() error { return os.Remove(g.dir) }

// String names the group and its quota.
func (g *Group) String() string {
	kind := "cgroup v1 cpu.cfs_quota_us"
	if g.v2 {
		kind = "cgroup v2 cpu.max"
	}
	return fmt.Sprintf("%s (%s = %.3f CPU)", g.dir, kind, g.Share)
}
