package ingest

import (
	"context"
	"encoding/json"
	"io"
	"os"
	"time"

	"github.com/google/uuid"

	"meridian/internal/auth"
	"meridian/store"
)

// Job is an ingestion job as callers see it (JobStatusResponse): never its staging path, import
// options or storage keys.
type Job struct {
	ID                        uuid.UUID
	Status                    string
	CurrentStep               *string
	Progress                  *float64
	RowsProcessed, RowsFailed *int64
	DatasetID                 *uuid.UUID
	SourceFilename            *string
	ErrorMessage, RetryReason *string
	WarningMessage            *string
	CanRetry                  bool
	Warnings                  json.RawMessage // the discriminated warning objects, as stored
	TemporalParseErrors       map[string]string
	StartedAt, CompletedAt    *time.Time
	CreatedAt                 time.Time
	CreatedBy                 *uuid.UUID
	Username                  *string // of CreatedBy; read by List only
}

func jobOf(j store.CatalogIngestJob) Job {
	out := Job{ID: j.ID, Status: j.Status, CurrentStep: j.CurrentStep, Progress: j.Progress, RowsProcessed: j.RowsProcessed,
		RowsFailed: j.RowsFailed, DatasetID: j.DatasetID, SourceFilename: j.SourceFilename, ErrorMessage: j.ErrorMessage,
		RetryReason: j.RetryReason, WarningMessage: j.WarningMessage, CanRetry: retryable(j), Warnings: j.Warnings,
		StartedAt: j.StartedAt, CompletedAt: j.CompletedAt, CreatedAt: j.CreatedAt, CreatedBy: j.CreatedBy}
	if out.CanRetry && out.RetryReason == nil {
		out.RetryReason = ptr("the staging file is kept: a retry runs the import again")
	}
	if !out.CanRetry {
		out.RetryReason = nil
	}
	_ = json.Unmarshal(j.TemporalParseErrors, &out.TemporalParseErrors)
	return out
}

// retryable tells whether Retry Job would re-queue j: it failed, whatever the cause and however
// often, and its staging file still exists (interface spec 3.1). Asked of the file itself, so it
// holds whoever removed the file. A materialized analysis has no file and can always run again.
func retryable(j store.CatalogIngestJob) bool {
	if j.Status != "failed" {
		return false
	}
	if j.StagingPath == nil { // an analysis runs again from its spec; nothing else lacks a file
		var o Options
		return json.Unmarshal(j.Options, &o) == nil && o.Analysis != nil
	}
	info, err := os.Stat(*j.StagingPath)
	return err == nil && info.Mode().IsRegular()
}

func jobsOf(rows []store.CatalogIngestJob) []Job {
	out := make([]Job, len(rows))
	for i, r := range rows {
		out[i] = jobOf(r)
	}
	return out
}

// Upload stages a file for a new pending job owned by the caller.
func (j *Jobs) Upload(ctx context.Context, p auth.Principal, filename string, r io.Reader) (Job, error) {
	job, err := j.upload(ctx, p, filename, r, nil)
	return jobOf(job), err
}

// Get returns a job to its creator or an admin; to anyone else it does not exist.
func (j *Jobs) Get(ctx context.Context, p auth.Principal, id uuid.UUID) (Job, error) {
	job, err := j.get(ctx, p, id)
	return jobOf(job), err
}

// Commit records the import options and queues the import, once (see commit).
func (j *Jobs) Commit(ctx context.Context, p auth.Principal, id uuid.UUID, opts Options) (Job, error) {
	job, err := j.commit(ctx, p, id, opts)
	return jobOf(job), err
}

// FanOut imports every chosen layer as its own dataset (see fanOut); it returns the new jobs and
// their layers.
func (j *Jobs) FanOut(ctx context.Context, p auth.Principal, id uuid.UUID, choices []FanOutChoice, base Options) ([]Job, []string, error) {
	jobs, layers, err := j.fanOut(ctx, p, id, choices, base)
	return jobsOf(jobs), layers, err
}

// Retry queues a failed job again with its kept staging file (see retry).
func (j *Jobs) Retry(ctx context.Context, p auth.Principal, id uuid.UUID, c auth.Client) (Job, error) {
	job, err := j.retry(ctx, p, id, c)
	return jobOf(job), err
}

// CompletePresigned assembles a presigned upload into staging (see completePresigned).
func (j *Jobs) CompletePresigned(ctx context.Context, p auth.Principal, id uuid.UUID, parts []PartETag) (Job, error) {
	job, err := j.completePresigned(ctx, p, id, parts)
	return jobOf(job), err
}

// JobFilter selects jobs in the admin list; nil fields select all.
type JobFilter struct {
	Status               *string
	CreatedBy, DatasetID *uuid.UUID
	Since                *time.Time
	Search               *string // in the file name or the error
	Sort                 string  // created_at (default), updated_at, status, source_filename
	Descending           bool
}

// List is a page of the jobs filter selects, newest first, and how many it selects in all.
func (j *Jobs) List(ctx context.Context, f JobFilter, skip, limit int) ([]Job, int, error) {
	rows, err := j.Q.ListIngestJobs(ctx, store.ListIngestJobsParams{Status: f.Status, CreatedBy: f.CreatedBy, DatasetID: f.DatasetID,
		Search: f.Search, Sort: f.Sort, Descending: f.Descending,
		Since: f.Since, Off: int32(skip), Lim: int32(limit)})
	if err != nil {
		return nil, 0, err
	}
	out := make([]Job, len(rows))
	total := 0
	for i, r := range rows {
		total = int(r.Total)
		out[i] = jobOf(r.CatalogIngestJob)
		out[i].Username = r.Username
	}
	return out, total, nil
}

// LatestOfDataset is a dataset's newest job, for its creator, the dataset's owner or an admin
// (catalog.LatestJob decides).
func (j *Jobs) LatestOfDataset(ctx context.Context, p auth.Principal, dataset uuid.UUID) (Job, error) {
	job, err := j.Catalog.LatestJob(ctx, p, dataset)
	return jobOf(job), err
}
