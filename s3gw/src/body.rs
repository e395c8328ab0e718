//! Request bodies into blobs (or inline), and stored data back out as response bodies,
//! both with memory bounded by a few chunks whatever the size.

use std::collections::BTreeMap;
use std::pin::Pin;
use std::task::{Context, Poll};

use bytes::{Bytes, BytesMut};
use catalog::ObjectData;
use futures::{Stream, StreamExt};
use s3s::dto::StreamingBlob;
use s3s::stream::{ByteStream, RemainingLength};
use s3s::{S3Result, TrailingHeaders, s3_error};
use storage::{BlobMeta, BlobStore, BlobWriter, StorageResult};
use tokio::sync::mpsc;

use crate::checksum::Wanted;
use crate::error::{OrS3, join_error};
use crate::sse::DataKey;

/// Bytes handed to the blob writer at a time.
const WRITE_CHUNK: usize = 1 << 20;

/// Largest body of one PutObject or UploadPart, as in S3.
pub const MAX_BODY: u64 = 5 << 30;

fn too_large() -> s3s::S3Error {
    s3_error!(
        EntityTooLarge,
        "Your proposed upload exceeds the maximum allowed object size"
    )
}

/// A received body, verified and durable on the drives (or inline).
#[derive(Debug)]
pub struct Received {
    /// Where the bytes are.
    pub data: ObjectData,
    /// Length.
    pub size: u64,
    /// MD5, hex.
    pub md5_hex: String,
    /// Raw MD5.
    pub md5: [u8; 16],
    /// Checksums to store.
    pub checksums: BTreeMap<String, String>,
}

/// Deletes blobs, off the async threads (best effort: a leftover is only wasted space).
/// Awaited, so a failed request answers only once its blobs are gone.
pub async fn delete_blobs(store: &BlobStore, blobs: Vec<BlobMeta>) {
    if blobs.is_empty() {
        return;
    }
    let store = store.clone();
    let done = tokio::task::spawn_blocking(move || {
        for b in blobs {
            if let Err(e) = store.delete(b.id) {
                tracing::warn!(blob = %b.id, error = %e, "could not delete an unused blob");
            }
        }
    });
    if let Err(e) = done.await {
        tracing::warn!(error = %e, "deleting unused blobs failed");
    }
}

/// Streams `body` into a new blob (or, when `allow_inline` and it is at most
/// [`crate::INLINE_MAX`] bytes, into memory), computing the MD5 and the checksums
/// `wanted` names and checking them and the length. With `seal`, the bytes are hashed as
/// received and encrypted on their way into the blob (never inlined). Nothing is left
/// behind on failure.
pub async fn receive(
    store: &BlobStore,
    body: Option<StreamingBlob>,
    content_length: Option<i64>,
    wanted: &Wanted,
    trailers: Option<&TrailingHeaders>,
    allow_inline: bool,
    seal: Option<&DataKey>,
) -> S3Result<Received> {
    // Encrypted bytes live only in blobs, whose ids key their keystreams.
    let allow_inline = allow_inline && seal.is_none();
    let mut hasher = wanted.hasher();
    let mut size: u64 = 0;
    let mut buf = BytesMut::new();
    let mut writer: Option<WriterTask> = None;
    if content_length.is_some_and(|l| l > MAX_BODY as i64) {
        return Err(too_large());
    }
    let mut body = body;
    loop {
        let next = match body.as_mut() {
            Some(b) => b.next().await,
            None => None,
        };
        let chunk = match next {
            Some(Ok(c)) => c,
            Some(Err(e)) => {
                tracing::debug!(error = %e, "request body failed");
                return Err(s3_error!(
                    IncompleteBody,
                    "The request body could not be read"
                ));
            }
            None => break,
        };
        hasher.update_checksums(&chunk);
        size += chunk.len() as u64;
        if size > MAX_BODY {
            return Err(too_large());
        }
        buf.extend_from_slice(&chunk);
        let threshold = if writer.is_some() || !allow_inline {
            WRITE_CHUNK
        } else {
            crate::INLINE_MAX
        };
        if buf.len() > threshold || (writer.is_some() && buf.len() >= WRITE_CHUNK) {
            if writer.is_none() {
                writer = Some(spawn_writer(store, seal)?);
            }
            let out = buf.split().freeze();
            // Hashed (on the shared lanes) while the next bytes arrive and this chunk is
            // written.
            hasher.update_md5(out.clone()).await;
            if let Some((tx, _)) = &writer
                && tx.send(Chunk::Data(out)).await.is_err()
            {
                // The writer stopped: its error is reported below.
                break;
            }
        }
    }
    if let Some(len) = content_length
        && u64::try_from(len).ok() != Some(size)
    {
        return Err(s3_error!(
            IncompleteBody,
            "You did not provide the number of bytes specified by the Content-Length HTTP header"
        ));
    }
    let rest = buf.freeze();
    hasher.update_md5(rest.clone()).await;
    let (md5, computed) = hasher.finish().await;
    // A blob being written is unfinished until the checks pass: without `Finish` its
    // writer drops it, which removes its shards (awaited, so a refused body leaves
    // nothing behind).
    let checksums = match wanted.verify(&md5, &computed, trailers) {
        Ok(c) => c,
        Err(e) => {
            if let Some((tx, h)) = writer {
                drop(tx);
                let _ = h.await;
            }
            return Err(e);
        }
    };
    let (tx, h) = match writer {
        None if allow_inline && rest.len() <= crate::INLINE_MAX => {
            return Ok(Received {
                data: ObjectData::Inline(rest.to_vec()),
                size,
                md5_hex: crate::hex(&md5),
                md5,
                checksums,
            });
        }
        None => spawn_writer(store, seal)?,
        Some(w) => w,
    };
    let meta = finish_stream(tx, h, rest).await?;
    Ok(Received {
        data: ObjectData::Blobs(vec![meta]),
        size,
        md5_hex: crate::hex(&md5),
        md5,
        checksums,
    })
}

/// What the receiving task sends its blob writer thread.
enum Chunk {
    /// More bytes of the body.
    Data(Bytes),
    /// The body is complete and verified: finish the blob (durably).
    Finish,
}

/// A blob writer thread: it finishes the blob on [`Chunk::Finish`] and drops it (removing
/// its shards) when the channel closes without one.
type WriterTask = (
    mpsc::Sender<Chunk>,
    tokio::task::JoinHandle<StorageResult<Option<BlobMeta>>>,
);

fn spawn_writer(store: &BlobStore, seal: Option<&DataKey>) -> S3Result<WriterTask> {
    let (tx, mut rx) = mpsc::channel::<Chunk>(2);
    let store = store.clone();
    let seal = seal.cloned();
    let h = tokio::task::spawn_blocking(move || {
        let mut w: BlobWriter = store.create()?;
        let mut cipher = seal.map(|k| k.blob_cipher(w.id()));
        while let Some(c) = rx.blocking_recv() {
            match c {
                Chunk::Data(b) => match cipher.as_mut() {
                    Some(cipher) => {
                        let mut sealed = b.to_vec();
                        cipher.apply(&mut sealed);
                        w.write(&sealed)?;
                    }
                    None => w.write(&b)?,
                },
                // Finished on this thread: one hand-off fewer per object than a
                // separate finishing task.
                Chunk::Finish => return w.finish().map(Some),
            }
        }
        Ok(None)
    });
    Ok((tx, h))
}

/// Sends the last bytes and `Finish`, and waits for the durable blob.
async fn finish_stream(
    tx: mpsc::Sender<Chunk>,
    h: tokio::task::JoinHandle<StorageResult<Option<BlobMeta>>>,
    rest: Bytes,
) -> S3Result<BlobMeta> {
    if !rest.is_empty() {
        let _ = tx.send(Chunk::Data(rest)).await;
    }
    // A failed send means the writer stopped: its error comes from the join below.
    let _ = tx.send(Chunk::Finish).await;
    drop(tx);
    h.await
        .map_err(join_error)?
        .or_s3()?
        .ok_or_else(|| s3_error!(InternalError, "the blob writer stopped before finishing"))
}

/// A response body fed by a blocking reader thread through a small channel.
pub struct ChannelBody {
    /// The chunk read before the response started.
    first: Option<Bytes>,
    rx: mpsc::Receiver<StorageResult<Bytes>>,
    remaining: u64,
}

impl Stream for ChannelBody {
    type Item = Result<Bytes, s3s::StdError>;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        let next = match self.first.take() {
            Some(b) => Poll::Ready(Some(Ok(b))),
            None => self.rx.poll_recv(cx),
        };
        match next {
            Poll::Ready(Some(Ok(b))) => {
                self.remaining = self.remaining.saturating_sub(b.len() as u64);
                Poll::Ready(Some(Ok(b)))
            }
            // Past the first chunk the status line is sent: the connection is cut short,
            // which the client sees against Content-Length.
            Poll::Ready(Some(Err(e))) => Poll::Ready(Some(Err(Box::new(e)))),
            Poll::Ready(None) => Poll::Ready(None),
            Poll::Pending => Poll::Pending,
        }
    }
}

impl ByteStream for ChannelBody {
    fn remaining_length(&self) -> RemainingLength {
        RemainingLength::new_exact(self.remaining as usize)
    }
}

/// Stream wrapper that reports its exact length.
struct Exact(Option<Bytes>);

impl Stream for Exact {
    type Item = Result<Bytes, s3s::StdError>;
    fn poll_next(mut self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        Poll::Ready(self.0.take().map(Ok))
    }
}

impl ByteStream for Exact {
    fn remaining_length(&self) -> RemainingLength {
        RemainingLength::new_exact(self.0.as_ref().map_or(0, |b| b.len()))
    }
}

/// Calls `each` with the bytes of `start..end` of `data`, one stripe-sized chunk at a
/// time (blocking: run it off the async threads), decrypted with `key` when the object
/// is encrypted. Stops early when `each` says so.
pub fn read_range(
    store: &BlobStore,
    data: &ObjectData,
    start: u64,
    end: u64,
    key: Option<&DataKey>,
    mut each: impl FnMut(Vec<u8>) -> bool,
) -> StorageResult<()> {
    match data {
        ObjectData::Inline(d) => {
            let s = (start as usize).min(d.len());
            let e = (end as usize).min(d.len());
            each(d[s..e].to_vec());
        }
        ObjectData::Blobs(blobs) => {
            let mut pos = 0u64;
            for b in blobs {
                let (bs, be) = (pos, pos + b.len);
                pos = be;
                let s = start.max(bs);
                let e = end.min(be);
                if s >= e {
                    continue;
                }
                let r = store.open(b.id)?;
                let mut cipher = key.map(|k| {
                    let mut c = k.blob_cipher(b.id);
                    c.seek(s - bs);
                    c
                });
                for c in r.chunks(s - bs, e - s)? {
                    let mut c = c?;
                    if let Some(cipher) = cipher.as_mut() {
                        cipher.apply(&mut c);
                    }
                    if !each(c) {
                        return Ok(());
                    }
                }
            }
        }
    }
    Ok(())
}

/// A streaming response body of `start..end` of `data`. Its first chunk is read before
/// the response starts, so object data that cannot be read is an error response (503 when
/// too many drives are away, 500 otherwise, with the request id), never a 200 cut short.
pub async fn response_body(
    store: &BlobStore,
    data: &ObjectData,
    start: u64,
    end: u64,
    key: Option<&DataKey>,
) -> S3Result<StreamingBlob> {
    if let ObjectData::Inline(d) = data {
        let s = (start as usize).min(d.len());
        let e = (end as usize).min(d.len());
        return Ok(StreamingBlob::new(Exact(Some(Bytes::copy_from_slice(
            &d[s..e],
        )))));
    }
    let (tx, mut rx) = mpsc::channel(2);
    let store = store.clone();
    let data = data.clone();
    let key = key.cloned();
    tokio::task::spawn_blocking(move || {
        let res = read_range(&store, &data, start, end, key.as_ref(), |c| {
            tx.blocking_send(Ok(Bytes::from(c))).is_ok()
        });
        if let Err(e) = res {
            tracing::error!(error = %e, "reading object data failed");
            let _ = tx.blocking_send(Err(e));
        }
    });
    let first = match rx.recv().await {
        Some(Ok(b)) => Some(b),
        Some(Err(e)) => return Err(crate::error::storage_error(e)),
        None => None,
    };
    Ok(StreamingBlob::new(ChannelBody {
        first,
        rx,
        remaining: end.saturating_sub(start),
    }))
}
