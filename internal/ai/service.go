// Package ai is the AI assistance of the catalog: chat about a map or a dataset with tools over
// what the caller may read, map generation, metadata drafts, and the embeddings behind semantic
// search. Two provider APIs are spoken through their official SDKs: the OpenAI-compatible
// chat-completions and embeddings API (openai-go) and Anthropic's Messages API
// (anthropic-sdk-go), chosen by the settings at every request.
//
// Every tool runs as the caller through the same catalog, SQL and map functions the API uses
// (tools.go): what a model asks for, whatever the text it read told it, is answered with what the
// caller could have read anyway.
package ai

import (
	"context"
	"log/slog"
	"net"
	"net/http"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/riverqueue/river"

	"meridian/internal/catalog"
	"meridian/internal/features"
	"meridian/internal/maps"
	"meridian/internal/settings"
	"meridian/internal/sqlquery"
	"meridian/store"
)

// Service is the AI assistance over the catalog.
type Service struct {
	Pool     *pgxpool.Pool
	Q        *store.Queries
	Settings settings.Reader
	// Keys are the provider keys in use: the environment's, else the sealed settings'
	// (settings.Admin.ProviderKeys).
	Keys    func(ctx context.Context) (map[string]string, error)
	Catalog *catalog.Service
	Maps    *maps.Service
	SQL     *sqlquery.Service
	Tables  features.Reader // column statistics, as Get Column Stats reads them
	Log     *slog.Logger
	HTTP    *http.Client  // to the providers
	Timeout time.Duration // of one provider call
	// Enqueue schedules a job inside tx (ingest.Queue.InsertTx): the embedding backfills.
	Enqueue func(ctx context.Context, tx pgx.Tx, args river.JobArgs) error
	// Index answers the records nearest to a query (index.go); shared by the server's requests.
	Index *Index

	queries queryCache // query texts' vectors and rankings (search.go)
	setup   setupCache // the settings and keys as last read (setup.go)
	// embedder is the embedding client of the setup last used (setup.go)
	embedder keptEmbedder
}

// NewHTTPClient is the client the providers are called with: bounded connection set-up and wait
// for the first byte, no bound on a stream's length (a call's own timeout bounds it).
func NewHTTPClient() *http.Client {
	return &http.Client{Transport: &http.Transport{
		Proxy:                 http.ProxyFromEnvironment,
		DialContext:           (&net.Dialer{Timeout: 10 * time.Second, KeepAlive: 30 * time.Second}).DialContext,
		TLSHandshakeTimeout:   10 * time.Second,
		ResponseHeaderTimeout: 2 * time.Minute,
		// One provider answers every search's embedding: enough idle connections that 16
		// searches at once do not open (and hand-shake) new ones to it.
		MaxIdleConnsPerHost: 32,
		IdleConnTimeout:     90 * time.Second,
		ForceAttemptHTTP2:   true,
	}}
}

// callContext bounds one provider call.
func (s *Service) callContext(ctx context.Context) (context.Context, context.CancelFunc) {
	if s.Timeout <= 0 {
		return context.WithCancel(ctx)
	}
	return context.WithTimeout(ctx, s.Timeout)
}
