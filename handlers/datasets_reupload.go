package handlers

// Operations of the Datasets - Reupload tag.

import (
	"context"

	"meridian/gen"
)

// ReuploadDataset: Reupload Dataset (POST /datasets/{dataset_id}/reupload).
func (s *Server) ReuploadDataset(ctx context.Context, request gen.ReuploadDatasetRequestObject) (gen.ReuploadDatasetResponseObject, error) {
	return nil, notImplemented("reuploadDataset")
}

// RequestPresignedReupload: Request Presigned Reupload (POST /datasets/{dataset_id}/reupload/presigned).
func (s *Server) RequestPresignedReupload(ctx context.Context, request gen.RequestPresignedReuploadRequestObject) (gen.RequestPresignedReuploadResponseObject, error) {
	return nil, notImplemented("requestPresignedReupload")
}

// CompletePresignedReupload: Complete Presigned Reupload (POST /datasets/{dataset_id}/reupload/presigned/{job_id}/complete).
func (s *Server) CompletePresignedReupload(ctx context.Context, request gen.CompletePresignedReuploadRequestObject) (gen.CompletePresignedReuploadResponseObject, error) {
	return nil, notImplemented("completePresignedReupload")
}

// ReuploadServicePreview: Reupload Service Preview (POST /datasets/{dataset_id}/reupload/service/preview).
func (s *Server) ReuploadServicePreview(ctx context.Context, request gen.ReuploadServicePreviewRequestObject) (gen.ReuploadServicePreviewResponseObject, error) {
	return nil, notImplemented("reuploadServicePreview")
}

// ReuploadCommit: Reupload Commit (POST /datasets/{dataset_id}/reupload/{job_id}/commit).
func (s *Server) ReuploadCommit(ctx context.Context, request gen.ReuploadCommitRequestObject) (gen.ReuploadCommitResponseObject, error) {
	return nil, notImplemented("reuploadCommit")
}

// ReuploadPreview: Reupload Preview (POST /datasets/{dataset_id}/reupload/{job_id}/preview).
func (s *Server) ReuploadPreview(ctx context.Context, request gen.ReuploadPreviewRequestObject) (gen.ReuploadPreviewResponseObject, error) {
	return nil, notImplemented("reuploadPreview")
}
