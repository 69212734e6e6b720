package catalog

import (
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgtype"

	"meridian/store"
)

// Entry is a dataset's catalog entry as the domain hands it out: the fields of its row, with
// dates as plain times, so that callers never hold a storage type.
type Entry struct {
	ID                        uuid.UUID
	RecordID                  uuid.UUID
	TableSchema               string
	TableName                 string
	Registered                bool
	Title                     string
	Summary                   *string
	RecordType                string
	Visibility                string
	RecordStatus              string
	Origin                    *string
	OriginUri                 *string
	OriginRef                 []byte
	SourceFormat              *string
	SourceFilename            *string
	SourceUrl                 *string
	Srid                      *int32
	OriginalSrid              *int32
	GeometryType              *string
	HasGenericGeometry        bool
	Is3d                      *bool
	NDims                     *int32
	ZMin                      *float64
	ZMax                      *float64
	FeatureCount              *int64
	ExtentBbox                []float64
	ColumnInfo                []byte
	TileColumns               []string
	License                   *string
	Attribution               *string
	SourceOrganization        *string
	QualityStatement          *string
	LineageSummary            *string
	UpdateFrequency           *string
	UsageConstraints          *string
	AccessConstraints         *string
	SensitivityClassification *string
	OwnerOrg                  *string
	Language                  *string
	ThemeCategory             []string
	DataVintageStart          *time.Time
	DataVintageEnd            *time.Time
	CurrentVersion            int32
	SourceHealth              string
	SourceHealthDetail        *string
	SchemaDriftStatus         string
	LastRefreshedAt           *time.Time
	LastCheckedAt             *time.Time
	PublishedAt               *time.Time
	CreatedBy                 *uuid.UUID
	UpdatedBy                 *uuid.UUID
	LastEditedBy              *uuid.UUID
	LastEditedAt              *time.Time
	CreatedAt                 time.Time
	UpdatedAt                 time.Time
	QualityDetail             []byte
	IDColumn                  string
	GeometryColumn            string
	TileVersion               int64  // moves on with every change of what the dataset's tiles show
	Raster                    []byte // a raster dataset's description (Raster), JSON; nil for others
	DerivedFrom               []byte // an analysis output's provenance, JSON (Provenance)
}

func entryOf(r store.CatalogDataset) Entry {
	return Entry{
		ID:                        r.ID,
		RecordID:                  r.RecordID,
		TableSchema:               r.TableSchema,
		TableName:                 r.TableName,
		Registered:                r.Registered,
		Title:                     r.Title,
		Summary:                   r.Summary,
		RecordType:                r.RecordType,
		Visibility:                r.Visibility,
		RecordStatus:              r.RecordStatus,
		Origin:                    r.Origin,
		OriginUri:                 r.OriginUri,
		OriginRef:                 r.OriginRef,
		SourceFormat:              r.SourceFormat,
		SourceFilename:            r.SourceFilename,
		SourceUrl:                 r.SourceUrl,
		Srid:                      r.Srid,
		OriginalSrid:              r.OriginalSrid,
		GeometryType:              r.GeometryType,
		HasGenericGeometry:        r.HasGenericGeometry,
		Is3d:                      r.Is3d,
		NDims:                     r.NDims,
		ZMin:                      r.ZMin,
		ZMax:                      r.ZMax,
		FeatureCount:              r.FeatureCount,
		ExtentBbox:                r.ExtentBbox,
		ColumnInfo:                r.ColumnInfo,
		TileColumns:               r.TileColumns,
		License:                   r.License,
		Attribution:               r.Attribution,
		SourceOrganization:        r.SourceOrganization,
		QualityStatement:          r.QualityStatement,
		LineageSummary:            r.LineageSummary,
		UpdateFrequency:           r.UpdateFrequency,
		UsageConstraints:          r.UsageConstraints,
		AccessConstraints:         r.AccessConstraints,
		SensitivityClassification: r.SensitivityClassification,
		OwnerOrg:                  r.OwnerOrg,
		Language:                  r.Language,
		ThemeCategory:             r.ThemeCategory,
		DataVintageStart:          dateOf(r.DataVintageStart),
		DataVintageEnd:            dateOf(r.DataVintageEnd),
		CurrentVersion:            r.CurrentVersion,
		SourceHealth:              r.SourceHealth,
		SourceHealthDetail:        r.SourceHealthDetail,
		SchemaDriftStatus:         r.SchemaDriftStatus,
		LastRefreshedAt:           r.LastRefreshedAt,
		LastCheckedAt:             r.LastCheckedAt,
		PublishedAt:               r.PublishedAt,
		CreatedBy:                 r.CreatedBy,
		UpdatedBy:                 r.UpdatedBy,
		LastEditedBy:              r.LastEditedBy,
		LastEditedAt:              r.LastEditedAt,
		CreatedAt:                 r.CreatedAt,
		UpdatedAt:                 r.UpdatedAt,
		QualityDetail:             r.QualityDetail,
		IDColumn:                  r.IDColumn,
		GeometryColumn:            r.GeometryColumn,
		TileVersion:               r.TileVersion,
		Raster:                    r.Raster,
		DerivedFrom:               r.DerivedFrom,
	}
}

// dateOf is a date column as a time, nil when null.
func dateOf(d pgtype.Date) *time.Time {
	if !d.Valid {
		return nil
	}
	return &d.Time
}
