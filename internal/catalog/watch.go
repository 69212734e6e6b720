package catalog

import (
	"context"
	"errors"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"meridian/internal/apperr"
	"meridian/internal/auth"
	"meridian/store"
)

// Kept records are checked by feature reads in the database (features.Guard). Tiles go further: a
// repeated tile is answered from memory, so the kept record itself must be current. Every server
// listens on the channel catalog_datasets, where PostgreSQL announces each committed change of a
// record or its grants (migration 24), and forgets the record announced. A record is vouched for
// (current) only when it was read while the listener was up and no announcement at all arrived
// during its read; a server whose listener is down vouches for nothing.

// Watch listens for changes of dataset records until ctx ends, reconnecting after a lost
// connection. It holds one connection of its own, outside the pool.
func (s *Service) Watch(ctx context.Context) {
	for ctx.Err() == nil {
		err := s.listen(ctx)
		s.reads.unvouch()
		s.collections.heard(false)
		s.announce("", "", false)
		if ctx.Err() == nil {
			s.Log.Warn("catalog: listening for dataset changes failed; retrying", "err", err)
			select {
			case <-ctx.Done():
			case <-time.After(time.Second):
			}
		}
	}
}

func (s *Service) listen(ctx context.Context) error {
	conn, err := pgx.ConnectConfig(ctx, s.Pool.Config().ConnConfig.Copy())
	if err != nil {
		return err
	}
	defer func() { _ = conn.Close(context.Background()) }()
	// auth_users is heard here too, for the principals internal/auth keeps: one listening
	// connection per server.
	if _, err := conn.Exec(ctx, "LISTEN catalog_datasets; LISTEN catalog_maps; LISTEN "+AnnouncedCollections+"; LISTEN "+auth.AnnouncedUsers); err != nil {
		return err
	}
	s.reads.goLive()
	s.collections.heard(true)
	s.announce("", "", true)
	for {
		n, err := conn.WaitForNotification(ctx)
		if err != nil {
			return err
		}
		if id, err := uuid.Parse(n.Payload); err == nil && n.Channel == "catalog_datasets" {
			s.reads.changed(id)
		}
		if n.Channel == AnnouncedCollections {
			s.collections.heard(true)
		}
		s.announce(n.Channel, n.Payload, true)
	}
}

// announce passes an announcement on to Announced: a channel and its payload with the listener
// up, or "" when the listener went up (live) or down.
func (s *Service) announce(channel, payload string, live bool) {
	if s.Announced != nil {
		s.Announced(channel, payload, live)
	}
}

// Forget drops the kept record of dataset id on this server at once, without waiting for the
// announcement of the change to come back (a server's own edits are seen by its next request).
func (s *Service) Forget(id uuid.UUID) {
	s.reads.changed(id)
	s.announce("catalog_datasets", id.String(), s.reads.live.Load())
}

// Current is the record of dataset id without any authorization, for callers that authorize by
// other means (a signed tile template) or decide visibility themselves (auth.CanRead on
// Resource): from memory when the kept copy is vouched for, else read from the database and kept.
func (s *Service) Current(ctx context.Context, id uuid.UUID) (Dataset, error) {
	if d, ok := s.reads.get(id); ok && d.vouched {
		return *d, nil
	}
	return s.read(ctx, s.Q, auth.Principal{}, id)
}

// Resource is what the authorization policy needs to know of the record, without any caller's
// grant (a restricted record then needs Get to tell whether a grant opens it).
func (d Dataset) Resource() auth.Resource { return resource(d.row, "") }

// SignedTilesFloor is the exp at or below which signed tile templates of the dataset are void:
// its audience narrowed after they were issued (migration 66).
func (d Dataset) SignedTilesFloor() int64 { return d.row.SignedTilesFloor }

// DatasetOfTable is the id of the dataset whose data is the table schema.name.
func (s *Service) DatasetOfTable(ctx context.Context, schema, name string) (uuid.UUID, error) {
	id, err := s.Q.FindDatasetByTable(ctx, store.FindDatasetByTableParams{TableSchema: schema, TableName: name})
	if errors.Is(err, pgx.ErrNoRows) {
		return id, apperr.NotFound("no dataset has the table %s.%s", schema, name)
	}
	return id, err
}
