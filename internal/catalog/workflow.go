package catalog

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgtype"

	"meridian/internal/apperr"
	"meridian/internal/auth"
	"meridian/store"
)

// The default publication workflow of spec section 3.2: one step forward or back at a time.
const (
	StatusDraft     = "draft"
	StatusReady     = "ready"
	StatusInternal  = "internal"
	StatusPublished = "published"
)

var workflow = []string{StatusDraft, StatusReady, StatusInternal, StatusPublished}

// allowedMoves lists the statuses reachable in one step from status.
func allowedMoves(status string) []string {
	i := slices.Index(workflow, status)
	var out []string
	if i > 0 {
		out = append(out, workflow[i-1])
	}
	if i >= 0 && i+1 < len(workflow) {
		out = append(out, workflow[i+1])
	}
	return out
}

// publicationFields are the fields the publication rule needs filled (the title always is): a
// record published without them is published with a warning naming each. Optional fields
// (attribution, themes ...) count towards quality, not towards publication.
var publicationFields = []string{"summary", "license"}

// publicationWarnings names what the publication rule misses in d: "missing <field>" each.
func publicationWarnings(d store.CatalogDataset) []string {
	var w []string
	for _, f := range publicationFields {
		v := map[string]*string{"summary": d.Summary, "license": d.License}[f]
		if v == nil || strings.TrimSpace(*v) == "" {
			w = append(w, "missing "+f)
		}
	}
	return w
}

// MetadataWarnings are what publishing the dataset warns about (publicationWarnings).
func (d Dataset) MetadataWarnings() []string { return publicationWarnings(d.row) }

// KnownStatus refuses a status outside the workflow (422).
func KnownStatus(status string) error {
	if !slices.Contains(workflow, status) {
		return apperr.Unprocessable("status %q is not one of %s", status, strings.Join(workflow, ", "))
	}
	return nil
}

// SetStatus moves the publication status one step (section 3.2). A status outside the workflow
// answers 422; a move that skips answers 409 naming the allowed moves; the status the dataset
// already has is no move at all (200, nothing recorded).
func (s *Service) SetStatus(ctx context.Context, p auth.Principal, id uuid.UUID, status string) (string, []string, error) {
	defer s.Forget(id) // this server's next read (a tile, a map) sees the change
	return s.moveStatus(ctx, p, id, status, false)
}

// WalkToStatus moves to target through every intermediate status, each step checked and
// recorded, all in one transaction: a refused step leaves the dataset as it was.
func (s *Service) WalkToStatus(ctx context.Context, p auth.Principal, id uuid.UUID, target string) (string, []string, error) {
	defer s.Forget(id)
	return s.moveStatus(ctx, p, id, target, true)
}

// moveStatus answers the status reached and, when it is published, what the publication rule
// misses in the record.
func (s *Service) moveStatus(ctx context.Context, p auth.Principal, id uuid.UUID, target string, walkPath bool) (string, []string, error) {
	var warnings []string
	err := pgx.BeginFunc(ctx, s.Pool, func(tx pgx.Tx) error {
		q := s.Q.WithTx(tx)
		d, err := s.writable(ctx, q, p, id)
		if err != nil {
			return err
		}
		if err := walk(ctx, q, p, id, d.row.RecordStatus, target, walkPath); err != nil {
			return err
		}
		if target == StatusPublished {
			warnings = publicationWarnings(d.row)
		}
		return nil
	})
	return target, warnings, err
}

// walk moves the dataset from its status to target, in one step or (walkPath) along the
// workflow, each step checked and recorded in the history, inside the caller's transaction.
// Staying where it is records nothing.
func walk(ctx context.Context, q *store.Queries, p auth.Principal, id uuid.UUID, from, target string, walkPath bool) error {
	if err := KnownStatus(target); err != nil {
		return err
	}
	if from == target {
		return nil
	}
	steps := []string{target}
	if walkPath {
		steps = path(from, target)
	}
	for _, to := range steps {
		if !slices.Contains(allowedMoves(from), to) {
			return apperr.Conflict("cannot move from %s to %s; allowed moves from %s: %s", from, to, from,
				strings.Join(allowedMoves(from), ", "))
		}
		v, err := q.SetDatasetStatus(ctx, store.SetDatasetStatusParams{ID: id, RecordStatus: to, UpdatedBy: &p.UserID})
		if err != nil {
			return err
		}
		if err := history(ctx, q, id, v, ActionStatusChange, p, map[string]any{"record_status": change(from, to)}); err != nil {
			return err
		}
		from = to
	}
	return nil
}

// walkTo walks d to target along the workflow when a metadata change names a status.
func walkTo(ctx context.Context, q *store.Queries, p auth.Principal, d Dataset, target *string) error {
	if target == nil {
		return nil
	}
	return walk(ctx, q, p, d.row.ID, d.row.RecordStatus, *target, true)
}

// path lists the statuses from (exclusive) to target (inclusive) along the workflow.
func path(from, target string) []string {
	i, j := slices.Index(workflow, from), slices.Index(workflow, target)
	if i < 0 || i == j {
		return []string{target}
	}
	var out []string
	for i != j {
		if j > i {
			i++
		} else {
			i--
		}
		out = append(out, workflow[i])
	}
	return out
}

// Grant is an access grant on a restricted dataset.
type Grant struct {
	ID        uuid.UUID
	UserID    *uuid.UUID
	Username  *string
	Role      *string
	Level     string
	CreatedAt time.Time
}

// grantManager checks that the caller may manage the dataset's grants: its owner or an admin.
func (s *Service) grantManager(ctx context.Context, p auth.Principal, id uuid.UUID) error {
	d, err := s.get(ctx, s.Q, p, id, true)
	if err != nil {
		return err
	}
	return auth.AuthorizeManage(p, resource(d.row, d.grant), "dataset", "manage its grants")
}

// Grants lists the grants of a dataset.
func (s *Service) Grants(ctx context.Context, p auth.Principal, id uuid.UUID) ([]Grant, error) {
	if err := s.grantManager(ctx, p, id); err != nil {
		return nil, err
	}
	rows, err := s.Q.ListDatasetGrants(ctx, id)
	if err != nil {
		return nil, err
	}
	out := make([]Grant, len(rows))
	for i, r := range rows {
		out[i] = Grant{ID: r.ID, UserID: r.UserID, Username: r.Username, Role: r.Role, Level: r.Level, CreatedAt: r.CreatedAt}
	}
	return out, nil
}

// AddGrant gives a user or a role read or write access (a second grant for the same user
// changes its level).
func (s *Service) AddGrant(ctx context.Context, p auth.Principal, id uuid.UUID, userID *uuid.UUID, role *string, level string) (uuid.UUID, error) {
	defer s.Forget(id) // this server's next read (a tile, a map) sees the change
	if (userID == nil) == (role == nil) {
		return uuid.Nil, apperr.Unprocessable("give exactly one of user_id and role")
	}
	if err := s.grantManager(ctx, p, id); err != nil {
		return uuid.Nil, err
	}
	gid, err := s.Q.UpsertDatasetGrant(ctx, store.UpsertDatasetGrantParams{DatasetID: id, UserID: userID, Role: role, Level: level, CreatedBy: &p.UserID})
	var pgErr *pgconn.PgError
	switch {
	case errors.As(err, &pgErr) && pgErr.Code == "23505":
		return uuid.Nil, apperr.Conflict("this role already has a grant on the dataset; delete it first")
	case errors.As(err, &pgErr) && pgErr.Code == "23503":
		return uuid.Nil, apperr.NotFound("user %s not found", *userID)
	}
	return gid, err
}

// RemoveGrant deletes one grant.
func (s *Service) RemoveGrant(ctx context.Context, p auth.Principal, id, grantID uuid.UUID) error {
	defer s.Forget(id) // this server's next read (a tile, a map) sees the change
	if err := s.grantManager(ctx, p, id); err != nil {
		return err
	}
	n, err := s.Q.DeleteDatasetGrant(ctx, store.DeleteDatasetGrantParams{ID: grantID, DatasetID: id})
	if err == nil && n == 0 {
		return apperr.NotFound("grant %s not found", grantID)
	}
	return err
}

func date(t *time.Time) pgtype.Date {
	if t == nil {
		return pgtype.Date{}
	}
	return pgtype.Date{Time: *t, Valid: true}
}

// History lists a dataset's changes, newest first, to whoever may read it; dataOnly keeps the
// data versions. Anonymous callers (a public dataset's versions) do not learn who made them.
func (s *Service) History(ctx context.Context, p auth.Principal, id uuid.UUID, dataOnly bool, skip, limit int) ([]HistoryEntry, int, error) {
	if _, err := s.Get(ctx, p, id, false); err != nil {
		return nil, 0, err
	}
	prm := store.ListDatasetHistoryParams{DatasetID: id, Off: int32(skip), Lim: int32(limit)}
	if dataOnly {
		prm.DataActions = dataActions
	}
	rows, err := s.Q.ListDatasetHistory(ctx, prm)
	out := make([]HistoryEntry, len(rows))
	total := 0
	for i, r := range rows {
		out[i] = HistoryEntry{ID: r.PublicID, DatasetID: r.DatasetID, DatasetTitle: r.DatasetTitle, Version: int(r.Version),
			Action: r.Action, ActorID: r.ActorID, ActorDisplay: r.ActorDisplay, Changes: r.Changes, OccurredAt: r.OccurredAt}
		if p.Anonymous() {
			out[i].ActorID, out[i].ActorDisplay = nil, ""
		}
		total = int(r.Total)
	}
	return out, total, err
}

// RefreshRun is one refresh of a dataset from its source (sources.Refresh), its outcome as
// its job has it while the run has not ended on its own.
type RefreshRun struct {
	ID, DatasetID                 uuid.UUID
	VersionID, JobID, TriggeredBy *uuid.UUID
	TriggeredByUsername           *string
	OriginKind, Trigger, Status   string
	StartedAt                     time.Time
	ClaimedAt, FinishedAt         *time.Time
	RowsBefore, RowsAfter         *int64
	SchemaDiff                    []byte // as SchemaDiff shows it; nil until a commit
	ErrorCode, ErrorMessage       *string
}

// RefreshRuns lists a dataset's refresh runs, newest first, to whoever may read it (anonymous
// callers of a public dataset included, without who triggered them); 404 otherwise.
func (s *Service) RefreshRuns(ctx context.Context, p auth.Principal, id uuid.UUID, skip, limit int) ([]RefreshRun, int, error) {
	if _, err := s.Get(ctx, p, id, false); err != nil {
		return nil, 0, err
	}
	rows, err := s.Q.ListRefreshRuns(ctx, store.ListRefreshRunsParams{DatasetID: id, Off: int32(skip), Lim: int32(limit)})
	if err != nil {
		return nil, 0, err
	}
	out, total := make([]RefreshRun, len(rows)), 0
	for i, r := range rows {
		out[i] = RefreshRun{ID: r.ID, DatasetID: r.DatasetID, VersionID: r.DatasetVersionID, JobID: r.IngestJobID, TriggeredBy: r.TriggeredBy,
			TriggeredByUsername: r.TriggeredByUsername, OriginKind: r.OriginKind, Trigger: r.Trigger, Status: r.Status, StartedAt: r.StartedAt,
			ClaimedAt: r.ClaimedAt, FinishedAt: r.FinishedAt, RowsBefore: r.FeatureCountBefore, RowsAfter: r.FeatureCountAfter,
			SchemaDiff: r.SchemaDiff, ErrorCode: r.ErrorCode, ErrorMessage: r.ErrorMessage}
		if p.Anonymous() {
			out[i].TriggeredBy, out[i].TriggeredByUsername = nil, nil
		}
		total = int(r.Total)
	}
	return out, total, nil
}

// HistoryEntry is one recorded change of a dataset.
type HistoryEntry struct {
	ID, DatasetID uuid.UUID
	DatasetTitle  string // the dataset's title now
	Version       int    // the version the change produced
	Action        string
	ActorID       *uuid.UUID // nil for system actions
	ActorDisplay  string
	Changes       []byte // {"field": {"old": ..., "new": ...}, ...}
	OccurredAt    time.Time
}

// ColumnChange is a schema change of a dataset's table, from its history.
type ColumnChange struct {
	Action       string
	ActorID      *uuid.UUID
	ActorDisplay string
	Details      map[string]any
	At           time.Time
}

// ColumnChanges lists the schema changes of a dataset's table, newest first, to those who may
// change the dataset (admins included); others hear that it does not exist or is not theirs.
func (s *Service) ColumnChanges(ctx context.Context, p auth.Principal, id uuid.UUID, since *time.Time, skip, limit int) ([]ColumnChange, int, error) {
	if _, err := s.Get(ctx, p, id, true); err != nil {
		return nil, 0, err
	}
	rows, err := s.Q.ListColumnChanges(ctx, store.ListColumnChangesParams{DatasetID: id, Actions: columnActions, Since: since, Off: int32(skip), Lim: int32(limit)})
	out := make([]ColumnChange, len(rows))
	total := 0
	for i, r := range rows {
		out[i] = ColumnChange{Action: r.Action, ActorID: r.ActorID, ActorDisplay: r.ActorDisplay, At: r.OccurredAt}
		_ = json.Unmarshal(r.Changes, &out[i].Details)
		total = int(r.Total)
	}
	return out, total, err
}
