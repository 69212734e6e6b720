package catalog

import (
	"context"
	"regexp"
	"strings"

	"github.com/google/uuid"

	"meridian/internal/apperr"
	"meridian/internal/auth"
	"meridian/store"
)

// Translation is a record's title and summary in another language.
type Translation struct {
	RecordID uuid.UUID
	Language string
	Title    string
	Summary  *string
}

var languageTag = regexp.MustCompile(`^[A-Za-z]{2,3}(?:[-_][A-Za-z0-9]{2,8})*$`)

// CanonicalLanguage is a BCP 47 tag in its canonical case: the language lower case, a script
// (four letters) title case, a region (two letters) upper case, the rest lower case; `_` as `-`.
func CanonicalLanguage(tag string) (string, error) {
	if len(tag) > 35 || !languageTag.MatchString(tag) {
		return "", apperr.Unprocessable("language %q is not a BCP 47 language tag (for example fr, pt-BR)", tag)
	}
	parts := strings.FieldsFunc(tag, func(r rune) bool { return r == '-' || r == '_' })
	for i, p := range parts {
		switch {
		case i == 0:
			parts[i] = strings.ToLower(p)
		case len(p) == 4 && isLetters(p):
			parts[i] = strings.ToUpper(p[:1]) + strings.ToLower(p[1:])
		case len(p) == 2 && isLetters(p):
			parts[i] = strings.ToUpper(p)
		default:
			parts[i] = strings.ToLower(p)
		}
	}
	return strings.Join(parts, "-"), nil
}

func isLetters(s string) bool {
	return strings.IndexFunc(s, func(r rune) bool { return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z') }) < 0
}

// Translations lists a record's translations by language tag.
func (s *Service) Translations(ctx context.Context, p auth.Principal, recordID uuid.UUID, skip, limit int) ([]Translation, int, error) {
	d, err := s.recordDataset(ctx, s.Q, p, recordID, false)
	if err != nil {
		return nil, 0, err
	}
	rows, err := s.Q.ListRecordTranslations(ctx, store.ListRecordTranslationsParams{DatasetID: d.row.ID, Off: int32(skip), Lim: int32(limit)})
	if err != nil {
		return nil, 0, err
	}
	return listPage(rows, skip, func(r store.ListRecordTranslationsRow) int64 { return r.Total },
		func() (int64, error) { return s.Q.CountRecordTranslations(ctx, d.row.ID) },
		func(r store.ListRecordTranslationsRow) Translation {
			return translationOf(r.CatalogRecordTranslation, d.row.RecordID)
		})
}

func translationOf(r store.CatalogRecordTranslation, record uuid.UUID) Translation {
	return Translation{RecordID: record, Language: r.Language, Title: r.Title, Summary: r.Summary}
}

// SetTranslation creates or replaces a record's translation into one language; the record's own
// language is a conflict.
func (s *Service) SetTranslation(ctx context.Context, p auth.Principal, recordID uuid.UUID, tr Translation) (Translation, error) {
	lang, err := CanonicalLanguage(tr.Language)
	if err != nil {
		return Translation{}, err
	}
	if strings.TrimSpace(tr.Title) == "" {
		return Translation{}, apperr.Unprocessable("title: 1 to 500 characters, not only spaces")
	}
	err = s.changeRecord(ctx, p, recordID, func(q *store.Queries, d Dataset) error {
		if own := d.row.Language; own != nil && strings.EqualFold(*own, lang) {
			return apperr.Conflict("%s is the record's own language; change the record's title and summary instead", lang)
		}
		r, err := q.UpsertRecordTranslation(ctx, store.UpsertRecordTranslationParams{DatasetID: d.row.ID, Language: lang, Title: tr.Title, Summary: tr.Summary})
		if err != nil {
			return err
		}
		tr = translationOf(r, d.row.RecordID)
		return touch(ctx, q, p, d.row.ID, ActionTranslationSet, map[string]any{"translations": change(nil, map[string]any{"language": lang, "title": r.Title})})
	})
	return tr, err
}

// DeleteTranslation removes a record's translation into one language.
func (s *Service) DeleteTranslation(ctx context.Context, p auth.Principal, recordID uuid.UUID, language string) error {
	lang, err := CanonicalLanguage(language)
	if err != nil {
		return err
	}
	return s.changeRecord(ctx, p, recordID, func(q *store.Queries, d Dataset) error {
		n, err := q.DeleteRecordTranslation(ctx, store.DeleteRecordTranslationParams{DatasetID: d.row.ID, Language: lang})
		if err != nil {
			return err
		}
		if n == 0 {
			return apperr.NotFound("the record has no %s translation", lang)
		}
		return touch(ctx, q, p, d.row.ID, ActionTranslationRemove, map[string]any{"translations": change(lang, nil)})
	})
}
