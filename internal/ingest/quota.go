package ingest

import (
	"context"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/google/uuid"

	"meridian/internal/apperr"
	"meridian/store"
)

// Staging accounts for the disk that staged uploads hold, within two quotas, and expires what
// nobody will use any more. An upload, and later the members unpacked from it, are counted
// while they are written, so the quota is checked before the bytes reach the disk, not after.
// Bytes being written are counted in memory until they are recorded in catalog.staging_areas:
// concurrent uploads of one user on one server share the quota exactly; across servers only
// what has been recorded is seen.
type Staging struct {
	Dir     string // DATA_DIR: staging lives under Dir/staging
	Q       *store.Queries
	Log     *slog.Logger
	PerUser int64         // STAGING_QUOTA_PER_USER (admins are not held to it)
	Total   int64         // STAGING_QUOTA_TOTAL
	TTL     time.Duration // STAGING_TTL
	// OrphanAfter is how old a staging directory no job claims must be before it is removed: an
	// upload in progress has no job yet (HTTP_READ_TIMEOUT bounds it).
	OrphanAfter time.Duration

	mu       sync.Mutex
	inflight map[uuid.UUID]int64 // bytes being written, per owner
	inTotal  int64
}

// totalRetry is the Retry-After of a refused upload when the server's staging is full: space
// comes back as jobs finish or expire.
const totalRetry = time.Minute

// errQuota marks a refusal by a staging quota: the file is not at fault, and a job whose
// archive could not be unpacked for it stays as it was (see refuse).
var errQuota = errors.New("staging quota")

// claim is the right to write bytes of one owner into staging until it is recorded or dropped.
type claim struct {
	s           *Staging
	owner       uuid.UUID
	admin       bool
	mine, total int64 // recorded usage when the claim began
	taken       int64
}

// begin starts a claim for owner, reading what is recorded now.
func (s *Staging) begin(ctx context.Context, owner uuid.UUID, admin bool) (*claim, error) {
	u, err := s.Q.StagingUsage(ctx, &owner)
	if err != nil {
		return nil, err
	}
	return &claim{s: s, owner: owner, admin: admin, mine: u.Mine, total: u.Total}, nil
}

// take claims n more bytes, or refuses them with the quota they would break.
func (c *claim) take(n int64) error {
	s := c.s
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.inflight == nil {
		s.inflight = map[uuid.UUID]int64{}
	}
	mine := c.mine + s.inflight[c.owner] + n
	if !c.admin && s.PerUser > 0 && mine > s.PerUser {
		e := apperr.TooLarge("staging quota exceeded: your uploads awaiting a commit or a retry would hold more than the %d bytes "+
			"allowed per user (STAGING_QUOTA_PER_USER); commit or retry them, or wait until they expire (STAGING_TTL %s)", s.PerUser, s.TTL)
		e.Err = errQuota
		return e
	}
	if s.Total > 0 && c.total+s.inTotal+n > s.Total {
		return &apperr.Error{Kind: apperr.KindUnavailable, Title: "Service Unavailable", RetryAfter: totalRetry, Err: errQuota,
			Detail: "the server's staging space for uploads is full (STAGING_QUOTA_TOTAL); retry later"}
	}
	s.inflight[c.owner] += n
	s.inTotal += n
	c.taken += n
	return nil
}

// drop gives back what the claim took without recording it.
func (c *claim) drop() {
	s := c.s
	s.mu.Lock()
	defer s.mu.Unlock()
	s.inflight[c.owner] -= c.taken
	if s.inflight[c.owner] <= 0 {
		delete(s.inflight, c.owner)
	}
	s.inTotal -= c.taken
	c.taken = 0
}

// record writes what the claim took into the directory's row, then drops it from memory.
func (c *claim) record(ctx context.Context, dir uuid.UUID) error {
	err := c.s.Q.AddStagedBytes(ctx, store.AddStagedBytesParams{JobID: dir, OwnerID: &c.owner, Bytes: c.taken})
	c.drop()
	return err
}

// reserve claims n bytes for the directory of dir (an archive about to be unpacked); done
// records them once they are written, or gives them back.
func (s *Staging) reserve(ctx context.Context, dir, owner uuid.UUID, admin bool, n int64) (done func(kept bool), err error) {
	c, err := s.begin(ctx, owner, admin)
	if err != nil {
		return nil, err
	}
	if err := c.take(n); err != nil {
		return nil, err
	}
	return func(kept bool) {
		if !kept {
			c.drop()
		} else if err := c.record(context.WithoutCancel(ctx), dir); err != nil {
			s.Log.Warn("could not record staged bytes", "job_id", dir, "err", err)
		}
	}, nil
}

// remove deletes a staging directory and its accounting.
func (s *Staging) remove(ctx context.Context, dir uuid.UUID) error {
	if err := os.RemoveAll(StageDir(s.Dir, dir)); err != nil {
		return err
	}
	return s.Q.CloseStagingArea(ctx, dir)
}

// stagingDir is the directory a staging path lives in, named by the job that uploaded it.
func stagingDir(path string) (uuid.UUID, bool) {
	id, err := uuid.Parse(filepath.Base(filepath.Dir(path)))
	return id, err == nil
}

// Sweep expires staging nobody will use: uploads never committed within the TTL fail with the
// reason, failed jobs not retried within it give up their file, and every staging directory no
// pending, running or retryable job needs is removed, orphans (a server died mid-upload) once
// they are older than OrphanAfter. A committed job, one running, and a failed one within its
// retry window keep their files.
func (s *Staging) Sweep(ctx context.Context) (removed int, err error) {
	reason := "the upload was not committed within " + s.TTL.String() + " (STAGING_TTL); its staged file was removed: upload it again"
	expired, err := s.Q.ExpireUncommittedJobs(ctx, store.ExpireUncommittedJobsParams{ErrorMessage: &reason, TtlSeconds: s.TTL.Seconds()})
	if err != nil {
		return 0, err
	}
	released, err := s.Q.ReleaseStaleFailedJobs(ctx, s.TTL.Seconds())
	if err != nil {
		return 0, err
	}
	if len(expired)+len(released) > 0 {
		s.Log.Info("staging expired", "uncommitted_jobs", expired, "failed_jobs", released)
	}
	dirs := map[uuid.UUID]time.Time{}
	entries, err := os.ReadDir(filepath.Join(s.Dir, "staging"))
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return 0, err
	}
	for _, e := range entries {
		id, perr := uuid.Parse(e.Name())
		if info, ierr := e.Info(); perr == nil && ierr == nil && e.IsDir() {
			dirs[id] = info.ModTime()
		}
	}
	// Accounting of directories that are gone already (removed by an earlier sweep that failed
	// halfway, or by hand) goes too.
	areas, err := s.Q.ListStagingAreas(ctx)
	if err != nil {
		return 0, err
	}
	for _, a := range areas {
		if _, ok := dirs[a.JobID]; !ok {
			dirs[a.JobID] = a.CreatedAt
		}
	}
	for id, since := range dirs {
		use, err := s.Q.StagingInUse(ctx, id)
		if err != nil {
			return removed, err
		}
		if use.InUse || !use.Known && time.Since(since) < s.OrphanAfter {
			continue
		}
		if err := s.remove(ctx, id); err != nil {
			s.Log.Warn("could not remove a staging directory", "job_id", id, "err", err)
			continue
		}
		removed++
	}
	return removed, nil
}
