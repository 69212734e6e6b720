package catalog

import (
	"context"

	"github.com/google/uuid"
)

// RecordParts are the keywords (with their vocabularies) and the translations of records, by
// dataset id, in one statement each: what the open-data feeds describe of a page of records
// besides the record itself. The ids are those a records query answered the caller, which
// applied its visibility.
func (s *Service) RecordParts(ctx context.Context, ids []uuid.UUID) (map[uuid.UUID][]Keyword, map[uuid.UUID][]Translation, error) {
	keywords, translations := map[uuid.UUID][]Keyword{}, map[uuid.UUID][]Translation{}
	if len(ids) == 0 {
		return keywords, translations, nil
	}
	krows, err := s.Q.ListKeywordsOfDatasets(ctx, ids)
	if err != nil {
		return nil, nil, err
	}
	for _, k := range krows {
		keywords[k.DatasetID] = append(keywords[k.DatasetID], Keyword{ID: k.ID, Keyword: k.Keyword, Type: k.KeywordType,
			VocabularyURI: k.VocabularyUri, CreatedAt: k.CreatedAt})
	}
	trows, err := s.Q.ListTranslationsOfDatasets(ctx, ids)
	if err != nil {
		return nil, nil, err
	}
	for _, t := range trows {
		translations[t.DatasetID] = append(translations[t.DatasetID], Translation{Language: t.Language, Title: t.Title, Summary: t.Summary})
	}
	return keywords, translations, nil
}
