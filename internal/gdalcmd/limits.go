package gdalcmd

import (
	"errors"
	"fmt"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// Limits are what one GDAL process may take of the host, enforced by the kernel: a file that
// makes GDAL build a huge model in memory (a KML, a spreadsheet) or spin ends in an error naming
// the bound, not in the OOM killer choosing among the server's processes.
type Limits struct {
	Memory   int64         // address space (RLIMIT_AS), bytes; 0: none
	CPU      time.Duration // CPU time (RLIMIT_CPU); 0: none
	FileSize int64         // largest file the tool may write (RLIMIT_FSIZE), bytes; 0: none
	CacheMB  int           // GDAL_CACHEMAX, MB; 0: GDAL's own default (5% of the host's memory)
}

// prlimit sets the limits on itself and then executes the tool in the same process, so the
// limits hold from the tool's first instruction (util-linux, on every Debian; a Go parent cannot
// set another process's limits between fork and exec, and setting them after the start races
// the tool's first allocations).
const prlimit = "prlimit"

// cpuGrace is how long past the soft CPU limit (SIGXCPU) the hard one (SIGKILL) falls, for a
// tool that ignores the first.
const cpuGrace = 5 * time.Second

// wrap returns the program and arguments that run tool under l.
func (l Limits) wrap(tool string, args []string) (string, []string) {
	var lims []string
	if l.Memory > 0 {
		lims = append(lims, "--as="+strconv.FormatInt(l.Memory, 10))
	}
	if l.CPU > 0 {
		soft := int64((l.CPU + time.Second - 1) / time.Second)
		lims = append(lims, fmt.Sprintf("--cpu=%d:%d", soft, soft+int64(cpuGrace/time.Second)))
	}
	if l.FileSize > 0 {
		lims = append(lims, "--fsize="+strconv.FormatInt(l.FileSize, 10))
	}
	if len(lims) == 0 {
		return tool, args
	}
	// No core files: a tool stopped by a limit would otherwise write its whole memory to disk.
	out := append([]string{"--core=0"}, lims...)
	out = append(out, "--", tool)
	return prlimit, append(out, args...)
}

// CheckLimits fails when limits are asked for and prlimit is not installed.
func CheckLimits(l Limits) error {
	if l.Memory == 0 && l.CPU == 0 && l.FileSize == 0 {
		return nil
	}
	if _, err := exec.LookPath(prlimit); err != nil {
		return fmt.Errorf("GDAL processes are limited with prlimit(1), which is not installed (Debian: util-linux): %w", err)
	}
	return nil
}

// Exceeded names the limit a finished tool ran into, or "" when it ended for another reason.
// err is what Wait returned and output what the tool wrote (stderr, and stdout for ogrinfo).
// The caller rules out its own cancellation (the context's deadline) first.
func (l Limits) Exceeded(err error, output string) string {
	var ee *exec.ExitError
	if !errors.As(err, &ee) {
		return ""
	}
	ws, _ := ee.Sys().(syscall.WaitStatus)
	used := ee.UserTime() + ee.SystemTime()
	switch {
	case l.CPU > 0 && ws.Signaled() && (ws.Signal() == syscall.SIGXCPU || ws.Signal() == syscall.SIGKILL && used >= l.CPU):
		return fmt.Sprintf("the CPU time limit of GDAL processes (%s, GDAL_CPU_LIMIT)", l.CPU)
	case l.FileSize > 0 && ws.Signaled() && ws.Signal() == syscall.SIGXFSZ:
		return fmt.Sprintf("the largest file an export may write (%d bytes, EXPORT_MAX_BYTES)", l.FileSize)
	case l.Memory > 0 && (outOfMemory(output) || ws.Signaled() && (ws.Signal() == syscall.SIGABRT || ws.Signal() == syscall.SIGSEGV || ws.Signal() == syscall.SIGBUS)):
		// GDAL reports a failed allocation ("out of memory", C++'s bad_alloc, which aborts) or,
		// in code that does not check it, crashes: under a memory limit both are the limit.
		return fmt.Sprintf("the memory limit of GDAL processes (%d MB, GDAL_MEMORY_LIMIT)", l.Memory>>20)
	}
	return ""
}

func outOfMemory(output string) bool {
	o := strings.ToLower(output)
	return strings.Contains(o, "out of memory") || strings.Contains(o, "bad_alloc") || strings.Contains(o, "cannot allocate memory")
}
