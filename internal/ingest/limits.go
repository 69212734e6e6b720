package ingest

import (
	"context"
	"path/filepath"
	"strings"

	"meridian/internal/apperr"
	"meridian/internal/auth"
)

// Limits are what an upload of a caller may be now: the admin's settings (storage tab) within
// the bounds of the environment and of this build.
type Limits struct {
	MaxBytes   int64    // upload_max_size_mb, within MAX_UPLOAD_BYTES
	Extensions []string // the formats this build reads that upload_allowed_extensions accepts
	// RemainingDatasets and StorageLeft are what the caller's quotas (max_datasets_per_user,
	// max_storage_bytes_per_user) leave; nil without a quota. Admins have none.
	RemainingDatasets, StorageLeft *int64
}

// Limits reads the limits of an upload by p.
func (j *Jobs) Limits(ctx context.Context, p auth.Principal) (Limits, error) {
	u, err := j.Settings.Uploads(ctx)
	if err != nil {
		return Limits{}, err
	}
	l := Limits{MaxBytes: u.MaxBytes(j.MaxUpload)}
	for _, e := range Extensions {
		if u.Accepts(e, Extensions) {
			l.Extensions = append(l.Extensions, e)
		}
	}
	if p.IsAdmin() || (u.MaxDatasetsPerUser == 0 && u.MaxStorageBytesPerUser == 0) {
		return l, nil
	}
	usage, err := j.Q.UsageOfUser(ctx, &p.UserID)
	if err != nil {
		return l, err
	}
	if u.MaxDatasetsPerUser > 0 {
		n := max(u.MaxDatasetsPerUser-usage.DatasetCount, 0)
		l.RemainingDatasets = &n
	}
	if u.MaxStorageBytesPerUser > 0 {
		n := max(u.MaxStorageBytesPerUser-usage.StorageBytes, 0)
		l.StorageLeft = &n
	}
	return l, nil
}

// admit refuses an upload of filename that breaks a limit; size is -1 while it is not known (a
// streamed upload is checked again once staged).
func (l Limits) admit(filename string, size int64) error {
	if err := CheckFilename(filename); err != nil {
		return err
	}
	ext := strings.ToLower(filepath.Ext(filename))
	accepted := false
	for _, e := range l.Extensions {
		accepted = accepted || e == ext
	}
	switch {
	case !accepted:
		return apperr.Unprocessable("files of type %q are not accepted on this server; use one of %s", filepath.Ext(filename),
			strings.Join(l.Extensions, " "))
	case l.RemainingDatasets != nil && *l.RemainingDatasets == 0:
		return apperr.Unprocessable("dataset quota exceeded: you own the most datasets allowed per user; delete one first")
	case size > l.MaxBytes:
		return apperr.TooLarge("the upload of %d bytes exceeds the limit of %d bytes", size, l.MaxBytes)
	case l.StorageLeft != nil && size > *l.StorageLeft:
		return apperr.TooLarge("storage quota exceeded: %d bytes left of your storage, the upload has %d", *l.StorageLeft, size)
	}
	return nil
}
