package handlers

// Operations of the Records tag.

import (
	"context"
	"strings"

	"meridian/gen"
	"meridian/internal/auth"
	"meridian/internal/catalog"
)

// ListContacts: List Contacts (GET /records/{record_id}/contacts/). 100/500.
func (s *Server) ListContacts(ctx context.Context, request gen.ListContactsRequestObject) (gen.ListContactsResponseObject, error) {
	skip, limit := page(request.Params.Skip, request.Params.Limit, 100, 500)
	list, total, err := s.catalog.Contacts(ctx, auth.From(ctx), request.RecordId, skip, limit)
	if err != nil {
		return nil, err
	}
	out := gen.ListContacts200JSONResponse{Contacts: make([]gen.ContactResponse, len(list)), Total: total, Skip: skip, Limit: limit}
	for i, c := range list {
		out.Contacts[i] = contactOut(c)
	}
	return out, nil
}

// CreateContact: Create Contact (POST /records/{record_id}/contacts/).
func (s *Server) CreateContact(ctx context.Context, request gen.CreateContactRequestObject) (gen.CreateContactResponseObject, error) {
	b := request.Body
	c, err := s.catalog.AddContact(ctx, auth.From(ctx), request.RecordId, catalog.Contact{Role: b.Role, Name: b.Name,
		Email: (*string)(b.Email), Organization: b.Organization, Phone: b.Phone, Extra: val(b.ExtraJson), SortOrder: val(b.SortOrder)})
	if err != nil {
		return nil, err
	}
	return gen.CreateContact201JSONResponse(contactOut(c)), nil
}

// DeleteContact: Delete Contact (DELETE /records/{record_id}/contacts/{contact_id}/).
func (s *Server) DeleteContact(ctx context.Context, request gen.DeleteContactRequestObject) (gen.DeleteContactResponseObject, error) {
	if err := s.catalog.DeleteContact(ctx, auth.From(ctx), request.RecordId, request.ContactId); err != nil {
		return nil, err
	}
	return gen.DeleteContact204Response{}, nil
}

// UpdateContact: Update Contact (PATCH /records/{record_id}/contacts/{contact_id}/). Members
// present change (null clears), absent ones stay.
func (s *Server) UpdateContact(ctx context.Context, request gen.UpdateContactRequestObject) (gen.UpdateContactResponseObject, error) {
	b := request.Body
	members, _ := patchMembersOf(ctx)
	ch := catalog.ContactPatch{Contact: catalog.Contact{Role: val(b.Role), Name: b.Name, Email: (*string)(b.Email),
		Organization: b.Organization, Phone: b.Phone, Extra: val(b.ExtraJson), SortOrder: val(b.SortOrder)}, Present: members.names()}
	c, err := s.catalog.UpdateContact(ctx, auth.From(ctx), request.RecordId, request.ContactId, ch)
	if err != nil {
		return nil, err
	}
	return gen.UpdateContact200JSONResponse(contactOut(c)), nil
}

func contactOut(c catalog.Contact) gen.ContactResponse {
	out := gen.ContactResponse{Id: c.ID, RecordId: c.RecordID, Role: c.Role, Name: c.Name, Email: c.Email,
		Organization: c.Organization, Phone: c.Phone, SortOrder: c.SortOrder}
	if c.Extra != nil {
		out.ExtraJson = &c.Extra
	}
	return out
}

// ListDistributions: List Distributions (GET /records/{record_id}/distributions/). 100/500.
func (s *Server) ListDistributions(ctx context.Context, request gen.ListDistributionsRequestObject) (gen.ListDistributionsResponseObject, error) {
	skip, limit := page(request.Params.Skip, request.Params.Limit, 100, 500)
	list, total, err := s.catalog.Distributions(ctx, auth.From(ctx), request.RecordId, skip, limit)
	if err != nil {
		return nil, err
	}
	out := gen.ListDistributions200JSONResponse{Distributions: make([]gen.DistributionResponse, len(list)), Total: total, Skip: skip, Limit: limit}
	for i, x := range list {
		x.URL = s.absolute(ctx, x)
		out.Distributions[i] = distributionOut(x)
	}
	return out, nil
}

// CreateDistribution: Create Distribution (POST /records/{record_id}/distributions/).
func (s *Server) CreateDistribution(ctx context.Context, request gen.CreateDistributionRequestObject) (gen.CreateDistributionResponseObject, error) {
	b := request.Body
	x, err := s.catalog.AddDistribution(ctx, auth.From(ctx), request.RecordId, catalog.Distribution{Type: b.DistributionType,
		Format: b.Format, URL: b.Url, Title: b.Title, Description: b.Description, Protocol: b.Protocol, MediaType: b.MediaType,
		Primary: val(b.IsPrimary)})
	if err != nil {
		return nil, err
	}
	return gen.CreateDistribution201JSONResponse(distributionOut(x)), nil
}

// DeleteDistribution: Delete Distribution (DELETE /records/{record_id}/distributions/{distribution_id}/).
func (s *Server) DeleteDistribution(ctx context.Context, request gen.DeleteDistributionRequestObject) (gen.DeleteDistributionResponseObject, error) {
	if err := s.catalog.DeleteDistribution(ctx, auth.From(ctx), request.RecordId, request.DistributionId); err != nil {
		return nil, err
	}
	return gen.DeleteDistribution204Response{}, nil
}

// UpdateDistribution: Update Distribution (PATCH /records/{record_id}/distributions/{distribution_id}/).
// Members present change (null clears), absent ones stay.
func (s *Server) UpdateDistribution(ctx context.Context, request gen.UpdateDistributionRequestObject) (gen.UpdateDistributionResponseObject, error) {
	b := request.Body
	members, _ := patchMembersOf(ctx)
	ch := catalog.DistributionPatch{Distribution: catalog.Distribution{Type: val(b.DistributionType), Format: val(b.Format),
		URL: val(b.Url), Title: b.Title, Description: b.Description, Protocol: b.Protocol, MediaType: b.MediaType,
		Primary: val(b.IsPrimary)}, Present: members.names()}
	x, err := s.catalog.UpdateDistribution(ctx, auth.From(ctx), request.RecordId, request.DistributionId, ch)
	if err != nil {
		return nil, err
	}
	return gen.UpdateDistribution200JSONResponse(distributionOut(x)), nil
}

func distributionOut(x catalog.Distribution) gen.DistributionResponse {
	return gen.DistributionResponse{Id: x.ID, RecordId: x.RecordID, DistributionType: x.Type, Format: &x.Format, Url: x.URL,
		Title: x.Title, Description: x.Description, Protocol: x.Protocol, MediaType: x.MediaType, IsPrimary: x.Primary,
		AutoGenerated: x.Generated}
}

// absolute is a distribution's URL as clients use it: a generated one's path under the API root
// of the address the caller used.
func (s *Server) absolute(ctx context.Context, x catalog.Distribution) string {
	if x.Generated {
		return s.base(ctx) + "/api" + x.URL
	}
	return x.URL
}

// ListKeywords: List Keywords (GET /records/{record_id}/keywords/). 100/500.
func (s *Server) ListKeywords(ctx context.Context, request gen.ListKeywordsRequestObject) (gen.ListKeywordsResponseObject, error) {
	skip, limit := page(request.Params.Skip, request.Params.Limit, 100, 500)
	list, total, err := s.catalog.Keywords(ctx, auth.From(ctx), request.RecordId, skip, limit)
	if err != nil {
		return nil, err
	}
	out := gen.ListKeywords200JSONResponse{Keywords: make([]gen.KeywordResponse, len(list)), Total: total, Skip: skip, Limit: limit}
	for i, k := range list {
		out.Keywords[i] = keywordOut(k)
	}
	return out, nil
}

// CreateKeyword: Create Keyword (POST /records/{record_id}/keywords/).
func (s *Server) CreateKeyword(ctx context.Context, request gen.CreateKeywordRequestObject) (gen.CreateKeywordResponseObject, error) {
	b := request.Body
	k, err := s.catalog.AddKeyword(ctx, auth.From(ctx), request.RecordId,
		catalog.Keyword{Keyword: strings.TrimSpace(b.Keyword), VocabularyURI: b.VocabularyUri, Type: val(b.KeywordType)})
	if err != nil {
		return nil, err
	}
	return gen.CreateKeyword201JSONResponse(keywordOut(k)), nil
}

// DeleteKeyword: Delete Keyword (DELETE /records/{record_id}/keywords/{keyword_id}/).
func (s *Server) DeleteKeyword(ctx context.Context, request gen.DeleteKeywordRequestObject) (gen.DeleteKeywordResponseObject, error) {
	if err := s.catalog.DeleteKeyword(ctx, auth.From(ctx), request.RecordId, request.KeywordId); err != nil {
		return nil, err
	}
	return gen.DeleteKeyword204Response{}, nil
}

func keywordOut(k catalog.Keyword) gen.KeywordResponse {
	return gen.KeywordResponse{Id: k.ID, RecordId: k.RecordID, Keyword: k.Keyword, VocabularyUri: k.VocabularyURI, KeywordType: k.Type}
}

// ListTranslations: List Translations (GET /records/{record_id}/translations/). 100/500.
func (s *Server) ListTranslations(ctx context.Context, request gen.ListTranslationsRequestObject) (gen.ListTranslationsResponseObject, error) {
	skip, limit := page(request.Params.Skip, request.Params.Limit, 100, 500)
	list, total, err := s.catalog.Translations(ctx, auth.From(ctx), request.RecordId, skip, limit)
	if err != nil {
		return nil, err
	}
	out := gen.ListTranslations200JSONResponse{Translations: make([]gen.TranslationResponse, len(list)), Total: total, Skip: skip, Limit: limit}
	for i, tr := range list {
		out.Translations[i] = translationOut(tr)
	}
	return out, nil
}

// UpsertTranslation: Upsert Translation (PUT /records/{record_id}/translations/{language}/).
func (s *Server) UpsertTranslation(ctx context.Context, request gen.UpsertTranslationRequestObject) (gen.UpsertTranslationResponseObject, error) {
	tr, err := s.catalog.SetTranslation(ctx, auth.From(ctx), request.RecordId,
		catalog.Translation{Language: request.Language, Title: request.Body.Title, Summary: request.Body.Summary})
	if err != nil {
		return nil, err
	}
	return gen.UpsertTranslation200JSONResponse(translationOut(tr)), nil
}

// DeleteTranslation: Delete Translation (DELETE /records/{record_id}/translations/{language}/).
func (s *Server) DeleteTranslation(ctx context.Context, request gen.DeleteTranslationRequestObject) (gen.DeleteTranslationResponseObject, error) {
	if err := s.catalog.DeleteTranslation(ctx, auth.From(ctx), request.RecordId, request.Language); err != nil {
		return nil, err
	}
	return gen.DeleteTranslation204Response{}, nil
}

func translationOut(tr catalog.Translation) gen.TranslationResponse {
	return gen.TranslationResponse{RecordId: tr.RecordID, Language: tr.Language, Title: tr.Title, Summary: tr.Summary}
}
