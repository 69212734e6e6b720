package handlers

// The AI operations of the Maps tag: availability, map chat, dataset chat, map generation and
// metadata drafts (internal/ai).

import (
	"context"
	"encoding/json"
	"fmt"
	"io"

	"github.com/google/uuid"

	"meridian/gen"
	"meridian/internal/ai"
	"meridian/internal/apperr"
	"meridian/internal/auth"
	"meridian/internal/web"
)

// AiAvailability: AI Availability (GET /ai/availability/). Every caller, anonymous included,
// gets an answer; no provider is called.
func (s *Server) AiAvailability(ctx context.Context, request gen.AiAvailabilityRequestObject) (gen.AiAvailabilityResponseObject, error) {
	a, err := s.ai.Availability(ctx, auth.From(ctx))
	return gen.AiAvailability200JSONResponse{Available: a.Available, Provider: a.Provider, Features: gen.AiAvailabilityFeatures{
		MapChat: a.MapChat, MapGeneration: a.MapGeneration, DatasetChat: a.DatasetChat, Metadata: a.Metadata}}, err
}

// Chat: Chat (POST /ai/chat/).
func (s *Server) Chat(ctx context.Context, request gen.ChatRequestObject) (gen.ChatResponseObject, error) {
	reply, err := s.ai.Chat(ctx, auth.From(ctx), mapChatOf(ctx, *request.Body))
	if err != nil {
		return nil, err
	}
	out := gen.Chat200JSONResponse{Explanation: reply.Explanation, Actions: []gen.ChatAction{}}
	for _, a := range reply.Actions {
		var ca gen.ChatAction
		if err := remarshal(a, &ca); err != nil {
			return nil, err
		}
		out.Actions = append(out.Actions, ca)
	}
	return out, nil
}

// AiChatStream: AI Chat Stream (POST /ai/chat/stream/).
func (s *Server) AiChatStream(ctx context.Context, request gen.AiChatStreamRequestObject) (gen.AiChatStreamResponseObject, error) {
	var body gen.ChatRequest // the same member for member
	if err := remarshal(request.Body, &body); err != nil {
		return nil, err
	}
	st, err := s.ai.ChatStream(ctx, auth.From(ctx), mapChatOf(ctx, body))
	if err != nil {
		return nil, err
	}
	return gen.AiChatStream200TexteventStreamResponse{Body: &eventStream{s: st}}, nil
}

// DatasetChatStream: Dataset Chat Stream (POST /ai/chat/dataset/stream/).
func (s *Server) DatasetChatStream(ctx context.Context, request gen.DatasetChatStreamRequestObject) (gen.DatasetChatStreamResponseObject, error) {
	b := request.Body
	st, err := s.ai.DatasetChatStream(ctx, auth.From(ctx), ai.DatasetChat{DatasetID: b.DatasetId, Message: b.Message,
		Language: val(b.Language), History: historyOf(b.History), Client: clientOf(ctx)})
	if err != nil {
		return nil, err
	}
	return gen.DatasetChatStream200TexteventStreamResponse{Body: &eventStream{s: st}}, nil
}

// GenerateMap: Generate Map (POST /ai/generate-map/). The caller asks for a map, so the draft is
// created as a private map of theirs; the stream only drafts.
func (s *Server) GenerateMap(ctx context.Context, request gen.GenerateMapRequestObject) (gen.GenerateMapResponseObject, error) {
	out, err := s.ai.GenerateMapOnce(ctx, auth.From(ctx), ai.GenerateMap{Prompt: request.Body.Prompt,
		Language: val(request.Body.Language), Save: true, Client: clientOf(ctx)})
	if err != nil {
		return nil, err
	}
	used := make([]string, 0, len(out.DatasetsUsed))
	for _, id := range out.DatasetsUsed {
		used = append(used, id.String())
	}
	mapID := ""
	if out.MapID != nil {
		mapID = out.MapID.String()
	}
	return gen.GenerateMap200JSONResponse{MapId: mapID, MapName: out.Name, Explanation: out.Explanation, DatasetsUsed: used}, nil
}

// GenerateMapStream: Generate Map Stream (POST /ai/generate-map/stream/).
func (s *Server) GenerateMapStream(ctx context.Context, request gen.GenerateMapStreamRequestObject) (gen.GenerateMapStreamResponseObject, error) {
	b := request.Body
	st, err := s.ai.GenerateMapStream(ctx, auth.From(ctx), ai.GenerateMap{Prompt: b.Prompt, Language: val(b.Language),
		DatasetIDs: val(b.DatasetIds), Save: val(b.Save), Client: clientOf(ctx)})
	if err != nil {
		return nil, err
	}
	return gen.GenerateMapStream200TexteventStreamResponse{Body: &eventStream{s: st}}, nil
}

// GenerateMetadataSummary: Generate Metadata Summary (POST /ai/metadata/summary/).
func (s *Server) GenerateMetadataSummary(ctx context.Context, request gen.GenerateMetadataSummaryRequestObject) (gen.GenerateMetadataSummaryResponseObject, error) {
	draft, err := s.ai.DraftSummary(ctx, auth.From(ctx), request.Body.DatasetId)
	return gen.GenerateMetadataSummary200JSONResponse{Draft: draft}, err
}

// GenerateMetadataKeywords: Generate Metadata Keywords (POST /ai/metadata/keywords/).
func (s *Server) GenerateMetadataKeywords(ctx context.Context, request gen.GenerateMetadataKeywordsRequestObject) (gen.GenerateMetadataKeywordsResponseObject, error) {
	id, err := uuidParam("dataset_id", request.Body.DatasetId)
	if err != nil {
		return nil, err
	}
	kws, err := s.ai.DraftKeywords(ctx, auth.From(ctx), id)
	out := gen.GenerateMetadataKeywords200JSONResponse{Keywords: []gen.KeywordSuggestion{}}
	for _, k := range kws {
		out.Keywords = append(out.Keywords, gen.KeywordSuggestion{Keyword: k.Keyword, KeywordType: k.Type})
	}
	return out, err
}

// GenerateMetadataLineage: Generate Metadata Lineage (POST /ai/metadata/lineage/).
func (s *Server) GenerateMetadataLineage(ctx context.Context, request gen.GenerateMetadataLineageRequestObject) (gen.GenerateMetadataLineageResponseObject, error) {
	draft, err := s.ai.DraftLineage(ctx, auth.From(ctx), request.Body.DatasetId)
	return gen.GenerateMetadataLineage200JSONResponse{Draft: draft}, err
}

// GenerateMetadataQualityStatement: Generate Metadata Quality Statement (POST /ai/metadata/quality-statement/).
func (s *Server) GenerateMetadataQualityStatement(ctx context.Context, request gen.GenerateMetadataQualityStatementRequestObject) (gen.GenerateMetadataQualityStatementResponseObject, error) {
	draft, err := s.ai.DraftQualityStatement(ctx, auth.From(ctx), request.Body.DatasetId)
	return gen.GenerateMetadataQualityStatement200JSONResponse{Draft: draft}, err
}

// mapChatOf is the chat turn of a Chat or AI Chat Stream body.
func mapChatOf(ctx context.Context, b gen.ChatRequest) ai.MapChat {
	in := ai.MapChat{Message: b.Message, MapID: b.MapId, Language: val(b.Language), History: historyOf(b.History), Client: clientOf(ctx)}
	for _, l := range b.Layers {
		layer := ai.Layer{ID: l.Id, Name: l.Name, DatasetID: l.DatasetId, TableName: l.DatasetTableName, Title: l.DatasetTitle,
			GeometryType: l.GeometryType, LayerType: l.LayerType, ColumnInfo: val(l.ColumnInfo), FeatureCount: l.FeatureCount,
			SampleValues: val(l.SampleValues), Visible: l.Visible == nil || *l.Visible, LabelConfig: val(l.LabelConfig),
			StyleConfig: val(l.StyleConfig), Paint: val(l.Paint)}
		if l.Filter != nil {
			if raw, err := l.Filter.MarshalJSON(); err == nil && string(raw) != "null" {
				layer.Filter = json.RawMessage(raw)
			}
		}
		in.Layers = append(in.Layers, layer)
	}
	return in
}

// historyOf is the earlier turns of a chat body (ChatHistoryMessage or AiChatHistoryMessage).
func historyOf(h any) []ai.Message {
	var turns []gen.ChatHistoryMessage
	_ = remarshal(h, &turns) // validated against the document already
	var out []ai.Message
	for _, m := range turns {
		out = append(out, ai.Message{Role: ai.Role(m.Role), Text: m.Content})
	}
	return out
}

// clientOf is who runs a query through the assistant, for the query audit.
func clientOf(ctx context.Context) ai.Client {
	m := web.MetaFrom(ctx)
	return ai.Client{IP: m.IP, UA: m.UserAgent}
}

func remarshal(from, to any) error {
	b, err := json.Marshal(from)
	if err != nil {
		return err
	}
	return json.Unmarshal(b, to)
}

// eventStream writes an AI stream's events as server-sent events, one frame per event, as the
// client reads them. Close (the response is over, or the client went away) stops the stream and
// the provider request under it.
type eventStream struct {
	s   *ai.Stream
	buf []byte
}

func (e *eventStream) Read(p []byte) (int, error) {
	for len(e.buf) == 0 {
		ev, ok := e.s.Next()
		if !ok {
			return 0, io.EOF
		}
		data, err := json.Marshal(ev.Data)
		if err != nil {
			return 0, err
		}
		e.buf = fmt.Appendf(e.buf, "event: %s\ndata: %s\n\n", ev.Name, data)
	}
	n := copy(p, e.buf)
	e.buf = e.buf[n:]
	return n, nil
}

func (e *eventStream) Close() error {
	e.s.Close()
	return nil
}

// uuidParam parses a body member that must be a UUID.
func uuidParam(name, v string) (uuid.UUID, error) {
	id, err := uuid.Parse(v)
	if err != nil {
		return uuid.Nil, apperr.Unprocessable("%s %q is not a dataset id (a UUID)", name, v)
	}
	return id, nil
}
