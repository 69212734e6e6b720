// Package connectors holds persistent connectors: sources a deployment installs (CONNECTORS)
// that discover resources in a system elsewhere and ingest them as datasets through the usual
// import path. A connector is a Go value implementing Connector; none is installed by default,
// so the list is empty. PostGIS is the worked example: tables of a schema in another database.
package connectors

import (
	"context"
	"encoding/json"
	"io"
	"sort"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/google/uuid"

	"meridian/internal/apperr"
	"meridian/internal/auth"
	"meridian/internal/ingest"
	"meridian/store"
)

// Resource is something a connector can ingest (a table, a layer, a feed).
type Resource struct {
	ID, Name, Kind string
	Metadata       map[string]any
}

// Connector is a kind of source a deployment installs. Config is the caller's configuration,
// already valid against ConfigSchema; it may carry a secret for the call, which a connector
// must never store or return.
type Connector interface {
	Name() string
	DisplayName() string
	// ConfigSchema is the JSON Schema (OpenAPI subset) of Config.
	ConfigSchema() map[string]any
	Discover(ctx context.Context, config map[string]any) ([]Resource, error)
	// Open streams resource as a file the import path reads (its name tells the format) and
	// says where it came from (the job's source: no secrets).
	Open(ctx context.Context, config map[string]any, resource Resource) (filename string, r io.ReadCloser, source map[string]any, err error)
}

// Stager stages, records and commits imports (ingest.Jobs).
type Stager interface {
	Upload(ctx context.Context, p auth.Principal, filename string, r io.Reader) (ingest.Job, error)
	Commit(ctx context.Context, p auth.Principal, id uuid.UUID, opts ingest.Options) (ingest.Job, error)
}

// Registry is the installed connectors.
type Registry struct {
	byName map[string]Connector
	Jobs   Stager
	Q      *store.Queries
}

// NewRegistry installs cs.
func NewRegistry(jobs Stager, q *store.Queries, cs ...Connector) *Registry {
	r := &Registry{byName: map[string]Connector{}, Jobs: jobs, Q: q}
	for _, c := range cs {
		r.byName[c.Name()] = c
	}
	return r
}

// List is every installed connector, by name.
func (r *Registry) List() []Connector {
	out := make([]Connector, 0, len(r.byName))
	for _, c := range r.byName {
		out = append(out, c)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name() < out[j].Name() })
	return out
}

// Discover asks connector name which resources config gives access to.
func (r *Registry) Discover(ctx context.Context, p auth.Principal, name string, config map[string]any, credentialID *string) ([]Resource, error) {
	c, err := r.connector(p, name, config, credentialID)
	if err != nil {
		return nil, err
	}
	return c.Discover(ctx, config)
}

// Ingest queues the import of one resource of connector name as a dataset of the caller.
func (r *Registry) Ingest(ctx context.Context, p auth.Principal, name string, config map[string]any, credentialID *string, resourceID string) (ingest.Job, error) {
	c, err := r.connector(p, name, config, credentialID)
	if err != nil {
		return ingest.Job{}, err
	}
	found, err := c.Discover(ctx, config)
	if err != nil {
		return ingest.Job{}, err
	}
	i := -1
	for k, res := range found {
		if res.ID == resourceID {
			i = k
		}
	}
	if i < 0 {
		return ingest.Job{}, apperr.NotFound("connector %s offers no resource %q with this configuration", name, resourceID)
	}
	filename, rd, source, err := c.Open(ctx, config, found[i])
	if err != nil {
		return ingest.Job{}, err
	}
	job, err := r.Jobs.Upload(ctx, p, filename, rd)
	_ = rd.Close()
	if err != nil {
		return ingest.Job{}, err
	}
	ref, _ := json.Marshal(source)
	if err := r.Q.SetIngestJobSource(ctx, store.SetIngestJobSourceParams{ID: job.ID, Source: ref}); err != nil {
		return ingest.Job{}, err
	}
	return r.Jobs.Commit(ctx, p, job.ID, ingest.Options{Title: found[i].Name})
}

// connector is name, installed, with config valid against its schema, for a caller who may
// upload.
func (r *Registry) connector(p auth.Principal, name string, config map[string]any, credentialID *string) (Connector, error) {
	if !p.Can(auth.CapUpload) {
		return nil, apperr.Forbidden("connectors need the upload capability")
	}
	c, ok := r.byName[name]
	if !ok {
		return nil, apperr.NotFound("no connector %q is installed", name)
	}
	if credentialID != nil {
		return nil, apperr.Unprocessable("connector %s takes no stored credentials; give them in config for the call", name)
	}
	raw, _ := json.Marshal(c.ConfigSchema())
	var schema openapi3.Schema
	if err := json.Unmarshal(raw, &schema); err != nil {
		return nil, err
	}
	var v any = map[string]any{}
	if config != nil {
		v = config
	}
	if err := schema.VisitJSON(v, openapi3.MultiErrors()); err != nil {
		return nil, apperr.Unprocessable("config does not fit connector %s: %v", name, err)
	}
	return c, nil
}
