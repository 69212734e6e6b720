package ingest

import (
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"meridian/internal/apperr"
	"meridian/internal/auth"
	"meridian/internal/blob"
	"meridian/store"
)

// PresignedTTL is how long presigned URLs and their job wait for the upload (open-points).
const PresignedTTL = time.Hour

// Presigned is the answer to a presigned upload request.
type Presigned struct {
	Job      Job
	URLs     []string
	PartSize *int64 // nil for a single-part upload
}

// RequestPresigned creates a pending job and the URLs its file is PUT to: one URL up to the
// threshold, one per part above it.
func (j *Jobs) RequestPresigned(ctx context.Context, p auth.Principal, filename string, size int64) (Presigned, error) {
	return j.requestPresigned(ctx, p, filename, size, nil)
}

// requestPresigned creates the job of a presigned upload; with reuploadOf, a reupload job of that
// dataset, which the caller was found to may replace.
func (j *Jobs) requestPresigned(ctx context.Context, p auth.Principal, filename string, size int64, reuploadOf *uuid.UUID) (Presigned, error) {
	if !p.Can(auth.CapUpload) {
		return Presigned{}, apperr.Forbidden("uploading needs the upload capability")
	}
	limits, err := j.uploadLimits(ctx, p, reuploadOf)
	if err != nil {
		return Presigned{}, err
	}
	if err := limits.admit(filename, size); err != nil {
		return Presigned{}, err
	}
	count, partSize := int32(1), (*int64)(nil)
	if size > j.PresignedThreshold {
		ps := j.PresignedPartSize
		partSize = &ps
		count = int32((size + ps - 1) / ps)
	}
	expires := time.Now().Add(PresignedTTL)
	id := uuid.New()
	key := "uploads/" + id.String() + "/" + filename
	urls, uploadID, err := j.Storage.Start(ctx, id, key, int(count), expires)
	if err != nil {
		return Presigned{}, apperr.Wrap(apperr.KindUpstream, err, "object storage refused to start the upload")
	}
	var up *string
	if uploadID != "" {
		up = &uploadID
	}
	job, err := j.Q.CreatePresignedJob(ctx, store.CreatePresignedJobParams{ID: id, SourceFilename: &filename,
		CreatedBy: &p.UserID, DeclaredSize: &size, PartSize: partSize, PartCount: &count, ExpiresAt: &expires,
		ObjectKey: &key, UploadID: up, ReuploadOf: reuploadOf})
	if err != nil {
		return Presigned{}, err
	}
	return Presigned{Job: jobOf(job), URLs: urls, PartSize: partSize}, nil
}

// openPresigned loads a presigned job that still waits for its file.
func (j *Jobs) openPresigned(ctx context.Context, job store.CatalogIngestJob) error {
	switch {
	case !job.Presigned:
		return apperr.Conflict("job %s is not a presigned upload", job.ID)
	case job.Status != "pending" || job.StagingPath != nil:
		return apperr.Conflict("the upload of job %s is already complete", job.ID)
	case job.ExpiresAt != nil && time.Now().After(*job.ExpiresAt):
		return apperr.Conflict("the upload of job %s expired; request a new one", job.ID)
	}
	return nil
}

// PutPart receives one part through a presigned URL of the local backend; the URL's signature is
// the credential.
func (j *Jobs) PutPart(ctx context.Context, id uuid.UUID, part int, exp, sig string, body io.Reader) (string, error) {
	local, ok := j.Storage.(*blob.Local)
	if !ok {
		return "", apperr.NotFound("uploads go to object storage on this deployment")
	}
	if err := local.Verify(id, part, exp, sig, time.Now()); err != nil {
		return "", apperr.Forbidden("%s", err.Error())
	}
	job, err := j.Q.GetIngestJob(ctx, id)
	if errors.Is(err, pgx.ErrNoRows) {
		return "", apperr.NotFound("no upload %s", id)
	}
	if err != nil {
		return "", err
	}
	if err := j.openPresigned(ctx, job); err != nil {
		return "", err
	}
	if job.PartCount == nil || part < 1 || part > int(*job.PartCount) {
		return "", apperr.NotFound("the upload has no part %d", part)
	}
	max := *job.DeclaredSize
	if job.PartSize != nil {
		max = *job.PartSize
	}
	etag, _, err := local.PutPart(id, part, body, max)
	if errors.Is(err, blob.ErrTooLarge) {
		return "", apperr.TooLarge("the part is larger than the %d bytes declared for it", max)
	}
	return etag, err
}

// PartETag is one completed part as the client reports it.
type PartETag struct {
	Number int
	ETag   string
}

// completePresigned checks the parts, assembles the file into staging and checks its size. The
// job stays pending for Preview and Commit.
func (j *Jobs) completePresigned(ctx context.Context, p auth.Principal, id uuid.UUID, parts []PartETag) (store.CatalogIngestJob, error) {
	job, err := j.get(ctx, p, id)
	if err != nil {
		return job, err
	}
	if err := j.openPresigned(ctx, job); err != nil {
		return job, err
	}
	count := int(*job.PartCount)
	if job.PartSize != nil {
		if len(parts) != count {
			return job, apperr.Unprocessable("the upload has %d parts; list each with its ETag", count)
		}
		for i, pt := range parts {
			if pt.Number != i+1 {
				return job, apperr.Unprocessable("parts must be listed in order 1..%d (got %d at position %d)", count, pt.Number, i+1)
			}
		}
	}
	bp := make([]blob.Part, len(parts))
	for i, pt := range parts {
		bp[i] = blob.Part{Number: pt.Number, ETag: pt.ETag}
	}
	// The declared size is claimed from the staging quota before the file is assembled there.
	owner := p.UserID
	if job.CreatedBy != nil {
		owner = *job.CreatedBy
	}
	c, err := j.Staging.begin(ctx, owner, p.IsAdmin())
	if err != nil {
		return job, err
	}
	if err := c.take(*job.DeclaredSize); err != nil {
		return job, err
	}
	// A failed completion keeps the parts received (they live in the job's staging directory)
	// for the client to complete again; only the claim goes.
	if job, err = j.assemble(ctx, job, bp, count); err != nil {
		c.drop()
		return job, err
	}
	return job, c.record(ctx, id)
}

// assemble writes a presigned upload's parts into its staging file and attaches it to the job.
func (j *Jobs) assemble(ctx context.Context, job store.CatalogIngestJob, bp []blob.Part, count int) (store.CatalogIngestJob, error) {
	id := job.ID
	dst := filepath.Join(StageDir(j.DataDir, id), deref(job.SourceFilename))
	if err := os.MkdirAll(filepath.Dir(dst), 0o750); err != nil {
		return job, err
	}
	size, err := j.Storage.Finish(ctx, id, deref(job.ObjectKey), deref(job.UploadID), bp, count, dst)
	switch {
	case errors.Is(err, blob.ErrPartMissing):
		return job, apperr.Unprocessable("not every part was uploaded")
	case errors.Is(err, blob.ErrETagMismatch):
		return job, apperr.Unprocessable("the ETags do not match the uploaded parts")
	case err != nil:
		return job, apperr.Wrap(apperr.KindUpstream, err, "object storage could not complete the upload")
	}
	switch {
	case size > *job.DeclaredSize:
		_ = os.Remove(dst)
		return job, apperr.TooLarge("the uploaded file has %d bytes, more than the %d declared", size, *job.DeclaredSize)
	case size < *job.DeclaredSize:
		_ = os.Remove(dst)
		return job, apperr.Unprocessable("the uploaded file has %d bytes, fewer than the %d declared", size, *job.DeclaredSize)
	}
	if n, err := j.Q.AttachStagedFile(ctx, store.AttachStagedFileParams{ID: id, StagingPath: &dst}); err != nil || n == 0 {
		if err == nil {
			err = apperr.Conflict("the upload of job %s was completed concurrently", id)
		}
		return job, err
	}
	return j.Q.GetIngestJob(ctx, id)
}
