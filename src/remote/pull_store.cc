// A pull's writes (Puller, puller.h): what arrived, held in memory up to
// the buffer, encoded on the download workers, streamed blobs stored
// through the store's blob writer, and the one batch at the end.
#include <algorithm>
#include <mutex>

#include "ki/blob_stream.h"
#include "ki/sign.h"
#include "remote/puller.h"
#include "remote/stream.h"

namespace ki::remote {

Result<std::string*> Puller::BytesOf(PullItem& p) {
  if (p.present && p.bytes.empty() && p.layer.size > 0) {
    KI_ASSIGN_OR_RETURN(p.bytes, store_.Read(p.layer.digest));
  }
  return &p.bytes;
}

Status Puller::Prepare(size_t i) {
  PullItem& p = items_[i];
  const Layer& l = p.layer;
  KI_ASSIGN_OR_RETURN(std::string * raw, BytesOf(p));
  auto m = ManifestFromCanonical(*raw, l.digest.str());
  if (!m.ok()) return m.status().WithContext("pulled manifest object " + l.digest.str());
  if (m->digest != l.digest || m->canonical != *raw) {
    return Status::InvalidInput("pulled manifest object " + l.digest.str() + " is not in canonical form");
  }
  auto doc_it = document_for_.find(l.digest);
  if (doc_it == document_for_.end()) {
    p.encoded = store_.EncodeManifest(*m, std::nullopt, "");
    return Status::OK();
  }
  PullItem& dp = items_[doc_it->second];
  KI_ASSIGN_OR_RETURN(std::string * doc, BytesOf(dp));
  DocFormat fmt = dp.layer.media_type == kDocumentMediaTypeYaml ? DocFormat::kYaml : DocFormat::kJson;
  ParseLimits limits;
  limits.max_bytes = std::max<uint64_t>(limits.max_bytes, doc->size());
  KI_ASSIGN_OR_RETURN(Json dj, ParseDocument(*doc, fmt, dp.layer.digest.str(), limits));
  auto full = ManifestFromJson(std::move(dj), dp.layer.digest.str());
  if (!full.ok() || full->digest != l.digest) {
    return Status::InvalidInput("pulled document " + dp.layer.digest.str() + " is not a document of " +
                                l.digest.str());
  }
  p.encoded = store_.EncodeManifest(*full, *doc, dp.layer.media_type);
  return Status::OK();
}

bool Puller::Completes(size_t i) {
  size_t m = manifest_of_[i];
  return m != SIZE_MAX && --waiting_[m] == 0;
}

Status Puller::WriteBlobs(const std::vector<size_t>& to_write) {
  std::lock_guard<std::mutex> bl(batch_mu_);
  KI_ASSIGN_OR_RETURN(auto batch, store_.NewBatch());
  for (size_t k : to_write) KI_RETURN_IF_ERROR(batch->PutBlob(items_[k].bytes, items_[k].layer.media_type).status());
  KI_RETURN_IF_ERROR(batch->Commit());
  for (size_t k : to_write) {
    items_[k].stored = true;
    std::string().swap(items_[k].bytes);
  }
  written_early_ += to_write.size();
  return Status::OK();
}

Status Puller::Hold(size_t i) {
  if (items_[i].layer.role != remote::Role::kBlob) return Status::OK();
  std::unique_lock<std::mutex> l(held_mu_);
  held_.push_back(i);
  held_bytes_ += items_[i].bytes.size();
  report_.peak_blob_bytes_held = std::max(report_.peak_blob_bytes_held, held_bytes_ + writing_bytes_);
  for (;;) {
    if (!writing_ && held_bytes_ * 2 > opts_.pull_buffer_bytes) {
      std::vector<size_t> to_write;
      to_write.swap(held_);
      writing_bytes_ = held_bytes_;
      held_bytes_ = 0;
      writing_ = true;
      l.unlock();
      Status ws = WriteBlobs(to_write);
      l.lock();
      writing_ = false;
      writing_bytes_ = 0;
      write_done_.notify_all();
      if (!ws.ok()) {
        // Not written: back to the held ones, for the batch at the end.
        for (size_t k : to_write) held_bytes_ += items_[k].bytes.size();
        held_.insert(held_.end(), to_write.begin(), to_write.end());
        return ws.WithContext("writing verified blobs to the store");
      }
      continue;  // others may have added meanwhile
    }
    if (held_bytes_ + writing_bytes_ <= opts_.pull_buffer_bytes || !writing_) return Status::OK();
    write_done_.wait(l);
  }
}

// A streamed blob: downloaded into a scratch file, checked as it arrives
// (GetBlobTo), then stored from that file in a batch of its own, as the
// early blob writes are (and for the same reason, nothing reads a blob's
// bytes after its check). The scratch file goes away on every way out.
Status Puller::StreamBlob(Conn& c, size_t i) {
  PullItem& p = items_[i];
  KI_ASSIGN_OR_RETURN(auto writer, OpenBlobWriter(store_, "blob " + p.layer.digest.str() + " from the remote"));
  remote::WriterSink sink(*writer);
  KI_RETURN_IF_ERROR(c.GetBlobTo(p.layer.digest, p.layer.size, sink));
  std::lock_guard<std::mutex> bl(batch_mu_);
  KI_ASSIGN_OR_RETURN(auto batch, store_.NewBatch());
  // Hashed on arrival: the store reads the scratch file once, to compress
  // it, and refuses it (Corruption) if it no longer hashes to the digest.
  KI_RETURN_IF_ERROR(writer->Finish(*batch, p.layer.media_type, p.layer.digest).status());
  KI_RETURN_IF_ERROR(batch->Commit().WithContext("writing verified blob " + p.layer.digest.str() + " to the store"));
  p.stored = true;
  streamed_stored_++;
  return Status::OK();
}

std::string Puller::StoredNote() const {
  const uint64_t n = written_early_ + streamed_stored_;
  if (n == 0) return "nothing was stored";
  return "no manifest, name or attestation was stored; the " + std::to_string(n) +
         " verified blobs written before the failure stay, and a re-run does not fetch them again";
}

// Everything is verified: build the batch. Blobs first, then every
// manifest in one PutEncodedManifests (written table by table in key
// order, as a bulk add does).
Status Puller::StoreAll() {
  KI_ASSIGN_OR_RETURN(auto batch, store_.NewBatch());
  for (PullItem& p : items_) {
    const Layer& l = p.layer;
    if (l.role != remote::Role::kBlob && l.role != remote::Role::kAttestation) continue;
    if (p.present || p.stored) continue;
    if (l.role == remote::Role::kAttestation && !envelopes_filed_.count(l.digest)) continue;  // faulty: warned above
    KI_RETURN_IF_ERROR(batch->PutBlob(p.bytes, l.media_type).status());
  }
  std::vector<EncodedManifest> manifests;
  manifests.reserve(to_store_.size());
  for (size_t i : to_store_) {
    if (!items_[i].prepared.ok()) return items_[i].prepared.WithContext("pull from " + url_.str() + " failed (" + StoredNote() + ")");
    // Every manifest in to_store waits for at least one piece from the
    // remote (the others are in the store already), and whoever brought
    // its last piece prepared it: unprepared means that bookkeeping broke.
    if (!items_[i].encoded) {
      return Status::Corruption("internal error: pulled manifest " + items_[i].layer.digest.str() +
                                " was never checked; " + StoredNote());
    }
    manifests.push_back(std::move(*items_[i].encoded));
    items_[i].encoded.reset();
  }
  KI_RETURN_IF_ERROR(batch->PutEncodedManifests(manifests).status());
  manifests.clear();
  for (const AttRow& r : rows_) KI_RETURN_IF_ERROR(FileAttestationRow(*batch, r.subject, r.envelope, r.value));
  // The registry served manifests naming these blobs: it holds them (a
  // later push to it need not ask), and the tags named those manifests.
  remote::StateUpdate learnt;
  learnt.blobs.push_back(remote::EmptyConfigDigest());
  for (const PullItem& p : items_) learnt.blobs.push_back(p.layer.digest);
  for (const Digest& d : pack_blobs_) learnt.blobs.push_back(d);  // named by a manifest the registry served
  for (size_t r = 0; r < tags_.size(); ++r)
    if (!tags_[r].empty()) learnt.tags.emplace_back(tags_[r], report_.refs[r].manifest);
  KI_RETURN_IF_ERROR(remote::WriteState(*batch, state_, learnt));
  return batch->Commit();
}

}  // namespace ki::remote
