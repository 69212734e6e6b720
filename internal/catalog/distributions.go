package catalog

import (
	"context"
	"crypto/sha1"
	"errors"
	"net/url"
	"strings"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"meridian/internal/apperr"
	"meridian/internal/auth"
	"meridian/internal/export"
	"meridian/store"
)

// Distribution is a way to get a record's data (dcat:Distribution): one the service offers by
// itself (Generated), or a download or access point the record's editors added.
type Distribution struct {
	ID, RecordID                            uuid.UUID
	Type, Format, URL                       string // URL: absolute, or under the API root for a generated one
	Title, Description, Protocol, MediaType *string
	Primary                                 bool
	Generated                               bool
}

// generatedNamespace makes the ids of generated distributions: a name-based uuid of the dataset
// and the distribution, the same on every server and every read, never stored.
var generatedNamespace = uuid.MustParse("5b0c2f3e-8d1a-4e7b-9c61-2f4a9e0d7c53")

// GeneratedDistributions are what the service offers by itself for a dataset of recordType,
// whose table is schema.table: a download per export format (tables too), and for a vector
// dataset its OGC API Features items and vector tiles; a raster its COG download. Their URLs are paths under the API root,
// so they follow whatever address the caller used. Computed, not stored: they change with the
// service (a new export format) and never go stale.
func GeneratedDistributions(datasetID, recordID uuid.UUID, recordType, schema, table string) []Distribution {
	id := datasetID.String()
	add := func(out []Distribution, o *offer, url string) []Distribution {
		return append(out, Distribution{ID: generatedID(id, o.kind, o.format), RecordID: recordID,
			Type: o.kind, Format: o.format, URL: url, Title: &o.title, MediaType: &o.mediaType, Generated: true})
	}
	if recordType == "raster_dataset" {
		// A raster is offered as its stored file, read remotely by range (no feature exports).
		return add(nil, &cogOffer, "/datasets/"+id+"/download/cog")
	}
	if recordType != "vector_dataset" && recordType != "table" {
		return nil
	}
	out := make([]Distribution, 0, len(downloadOffers)+2)
	for i := range downloadOffers {
		out = add(out, &downloadOffers[i], "/datasets/"+id+"/export?format="+downloadOffers[i].format)
	}
	out = add(out, &featuresOffer, "/collections/"+id+"/items")
	if recordType == "vector_dataset" {
		out = add(out, &tilesOffer, "/tiles/"+schema+"."+table+"/{z}/{x}/{y}.pbf")
	}
	return out
}

// offer is a kind of generated distribution. The distributions' titles and media types point
// into these, made once (a page of records lists seventy distributions): read them, never write
// through them.
type offer struct{ kind, format, title, mediaType string }

var (
	downloadOffers = func() []offer {
		out := make([]offer, len(export.FormatNames))
		for i, name := range export.FormatNames {
			f := export.Formats[name]
			out[i] = offer{"download", name, f.Title + " download", f.MediaType}
		}
		return out
	}()
	featuresOffer = offer{"ogc_api_features", "geojson", "OGC API Features items", "application/geo+json"}
	tilesOffer    = offer{"vector_tiles", "mvt", "Vector tiles (XYZ)", "application/vnd.mapbox-vector-tile"}
	cogOffer      = offer{"download", "cog", "Cloud Optimized GeoTIFF download", COGMediaType}
)

// generatedID is the id of a generated distribution: uuid.NewSHA1 of generatedNamespace and
// "dataset/kind/format", hashed on the stack instead of through a hasher and buffers of its own.
func generatedID(dataset, kind, format string) uuid.UUID {
	var buf [128]byte
	b := append(buf[:0], generatedNamespace[:]...)
	b = append(append(append(append(append(b, dataset...), '/'), kind...), '/'), format...)
	sum := sha1.Sum(b)
	var u uuid.UUID
	copy(u[:], sum[:16])
	u[6] = u[6]&0x0f | 0x50 // version 5
	u[8] = u[8]&0x3f | 0x80 // RFC 4122 variant
	return u
}

// COGMediaType is the media type of a raster dataset's Cloud Optimized GeoTIFF.
const COGMediaType = "image/tiff; application=geotiff; profile=cloud-optimized"

// DistributionPatch is a partial change: present members change (a present nil clears).
type DistributionPatch struct {
	Distribution
	Present map[string]bool
}

func (d *Distribution) check() error {
	if strings.TrimSpace(d.Type) == "" || strings.TrimSpace(d.Format) == "" {
		return apperr.Unprocessable("distribution_type and format are required")
	}
	u, err := url.Parse(d.URL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return apperr.Unprocessable("url %q is not an absolute http or https URL", d.URL)
	}
	// Schemes are case-insensitive (RFC 3986 3.1) and url.Parse reads them so; the URL is kept
	// with it in lower case, the form the table holds them in (and checks).
	d.URL = u.Scheme + d.URL[len(u.Scheme):]
	return nil
}

func distributionOf(r store.CatalogRecordDistribution, record uuid.UUID) Distribution {
	return Distribution{ID: r.ID, RecordID: record, Type: r.DistributionType, Format: r.Format, URL: r.Url, Title: r.Title,
		Description: r.Description, Protocol: r.Protocol, MediaType: r.MediaType, Primary: r.IsPrimary}
}

// Distributions lists a record's distributions: the generated ones first, then the record's own
// in creation order; skip and limit page over both.
func (s *Service) Distributions(ctx context.Context, p auth.Principal, recordID uuid.UUID, skip, limit int) ([]Distribution, int, error) {
	d, err := s.recordDataset(ctx, s.Q, p, recordID, false)
	if err != nil {
		return nil, 0, err
	}
	generated := GeneratedDistributions(d.row.ID, d.row.RecordID, d.row.RecordType, d.row.TableSchema, d.row.TableName)
	n := len(generated)
	page := generated[min(skip, n):min(skip+limit, n)]
	// The record's own rows are read even when the generated ones fill the page: their count
	// comes with them (or is asked when the page is past them).
	rows, err := s.Q.ListRecordDistributions(ctx, store.ListRecordDistributionsParams{DatasetID: d.row.ID,
		Off: int32(max(skip-n, 0)), Lim: int32(max(limit-len(page), 1))})
	if err != nil {
		return nil, 0, err
	}
	own, total, err := listPage(rows, max(skip-n, 0), func(r store.ListRecordDistributionsRow) int64 { return r.Total },
		func() (int64, error) { return s.Q.CountRecordDistributions(ctx, d.row.ID) },
		func(r store.ListRecordDistributionsRow) Distribution {
			return distributionOf(r.CatalogRecordDistribution, d.row.RecordID)
		})
	if err != nil {
		return nil, 0, err
	}
	return append(page, own[:min(len(own), limit-len(page))]...), n + total, nil
}

// refuseGenerated answers a change to a generated distribution: it follows the dataset.
func refuseGenerated(d Dataset, id uuid.UUID) error {
	for _, g := range GeneratedDistributions(d.row.ID, d.row.RecordID, d.row.RecordType, d.row.TableSchema, d.row.TableName) {
		if g.ID == id {
			return apperr.Conflict("distribution %s is generated by the service from the dataset and cannot be changed; add one of your own instead", id)
		}
	}
	return nil
}

// AddDistribution adds a distribution to a record the caller may change; a primary one takes the
// place of the record's previous primary distribution.
func (s *Service) AddDistribution(ctx context.Context, p auth.Principal, recordID uuid.UUID, x Distribution) (Distribution, error) {
	if err := x.check(); err != nil {
		return Distribution{}, err
	}
	err := s.changeRecord(ctx, p, recordID, func(q *store.Queries, d Dataset) error {
		if x.Primary {
			if err := q.ClearPrimaryDistribution(ctx, store.ClearPrimaryDistributionParams{DatasetID: d.row.ID, Keep: uuid.Nil}); err != nil {
				return err
			}
		}
		r, err := q.AddRecordDistribution(ctx, store.AddRecordDistributionParams{DatasetID: d.row.ID, DistributionType: x.Type,
			Format: x.Format, Url: x.URL, Title: x.Title, Description: x.Description, Protocol: x.Protocol, MediaType: x.MediaType,
			IsPrimary: x.Primary})
		if err != nil {
			return err
		}
		x = distributionOf(r, d.row.RecordID)
		return touch(ctx, q, p, d.row.ID, ActionDistributionAdd, map[string]any{"distributions": change(nil, x.URL)})
	})
	return x, err
}

// UpdateDistribution applies a partial change to a distribution of a record the caller may change.
func (s *Service) UpdateDistribution(ctx context.Context, p auth.Principal, recordID, id uuid.UUID, ch DistributionPatch) (Distribution, error) {
	var out Distribution
	err := s.changeRecord(ctx, p, recordID, func(q *store.Queries, d Dataset) error {
		if err := refuseGenerated(d, id); err != nil {
			return err
		}
		cur, err := q.GetRecordDistribution(ctx, store.GetRecordDistributionParams{ID: id, DatasetID: d.row.ID})
		if errors.Is(err, pgx.ErrNoRows) {
			return apperr.NotFound("distribution %s not found on this record", id)
		}
		if err != nil {
			return err
		}
		before := distributionOf(cur, d.row.RecordID)
		next := ch.merge(before)
		if err := next.check(); err != nil {
			return err
		}
		if next.Primary {
			if err := q.ClearPrimaryDistribution(ctx, store.ClearPrimaryDistributionParams{DatasetID: d.row.ID, Keep: id}); err != nil {
				return err
			}
		}
		r, err := q.UpdateRecordDistribution(ctx, store.UpdateRecordDistributionParams{ID: id, DatasetID: d.row.ID,
			DistributionType: next.Type, Format: next.Format, Url: next.URL, Title: next.Title, Description: next.Description,
			Protocol: next.Protocol, MediaType: next.MediaType, IsPrimary: next.Primary})
		if err != nil {
			return err
		}
		out = distributionOf(r, d.row.RecordID)
		return touch(ctx, q, p, d.row.ID, ActionDistributionUpdate, map[string]any{"distributions": change(before, out)})
	})
	return out, err
}

// merge is cur with the patch's present members applied; required members sent as null become
// empty, which check refuses.
func (ch DistributionPatch) merge(cur Distribution) Distribution {
	next, in := cur, ch.Present
	patch(in["distribution_type"], &next.Type, ch.Type)
	patch(in["format"], &next.Format, ch.Format)
	patch(in["url"], &next.URL, ch.URL)
	patch(in["title"], &next.Title, ch.Title)
	patch(in["description"], &next.Description, ch.Description)
	patch(in["protocol"], &next.Protocol, ch.Protocol)
	patch(in["media_type"], &next.MediaType, ch.MediaType)
	patch(in["is_primary"], &next.Primary, ch.Primary)
	return next
}

// DeleteDistribution removes a distribution from a record the caller may change.
func (s *Service) DeleteDistribution(ctx context.Context, p auth.Principal, recordID, id uuid.UUID) error {
	return s.changeRecord(ctx, p, recordID, func(q *store.Queries, d Dataset) error {
		if err := refuseGenerated(d, id); err != nil {
			return err
		}
		u, err := q.DeleteRecordDistribution(ctx, store.DeleteRecordDistributionParams{ID: id, DatasetID: d.row.ID})
		if errors.Is(err, pgx.ErrNoRows) {
			return apperr.NotFound("distribution %s not found on this record", id)
		}
		if err != nil {
			return err
		}
		return touch(ctx, q, p, d.row.ID, ActionDistributionRemove, map[string]any{"distributions": change(u, nil)})
	})
}
