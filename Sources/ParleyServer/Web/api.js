// REST client for /api/v1 with the stored token, server errors as ApiError.
const BASE = '/api/v1';
const TOKEN_KEY = 'parley.token';
const USER_KEY = 'parley.user';

export class ApiError extends Error {
  constructor(code, message, status = 0, retryAfter = null) {
    super(message || code);
    this.code = code;
    this.status = status;
    this.retryAfter = retryAfter;
  }
  // Worth trying again later with the same clientMessageId (nothing was stored).
  get retryable() {
    return ['network', 'disconnected', 'timeout', 'unavailable', 'rate_limited', 'internal'].includes(this.code);
  }
}

let unauthorizedHandler = () => {};
export function onUnauthorized(fn) { unauthorizedHandler = fn; }

export function getToken() { return localStorage.getItem(TOKEN_KEY); }
export function getSavedUser() {
  try { return JSON.parse(localStorage.getItem(USER_KEY) || 'null'); } catch { return null; }
}
export function saveSession(token, user) {
  if (token) localStorage.setItem(TOKEN_KEY, token);
  if (user) localStorage.setItem(USER_KEY, JSON.stringify(user));
}
export function clearSession() {
  localStorage.removeItem(TOKEN_KEY);
  localStorage.removeItem(USER_KEY);
}

async function errorFrom(res) {
  let body = null;
  try { body = await res.json(); } catch { /* not JSON */ }
  const err = body && body.error;
  const retryAfter = (err && err.retryAfter) || Number(res.headers.get('Retry-After')) || null;
  return new ApiError(err?.code || `http_${res.status}`, err?.message || `Request failed (${res.status})`, res.status, retryAfter);
}

export async function api(method, path, body) {
  const headers = {};
  const token = getToken();
  if (token) headers.Authorization = `Bearer ${token}`;
  if (body !== undefined) headers['Content-Type'] = 'application/json';
  let res;
  try {
    res = await fetch(BASE + path, { method, headers, body: body === undefined ? undefined : JSON.stringify(body) });
  } catch {
    throw new ApiError('network', 'Cannot reach the server', 0);
  }
  if (!res.ok) {
    const err = await errorFrom(res);
    if (res.status === 401 && token && !path.startsWith('/auth/')) unauthorizedHandler(err);
    throw err;
  }
  if (res.status === 204) return null;
  const text = await res.text();
  return text ? JSON.parse(text) : null;
}

export const qs = (params) => {
  const u = new URLSearchParams();
  for (const [k, v] of Object.entries(params)) if (v !== undefined && v !== null && v !== '') u.set(k, String(v));
  const s = u.toString();
  return s ? `?${s}` : '';
};

const ALLOWED_TYPES = new Set(['image/png', 'image/jpeg', 'image/gif', 'image/webp', 'image/heic', 'video/mp4',
  'video/quicktime', 'audio/mpeg', 'audio/mp4', 'audio/aac', 'audio/ogg', 'audio/wav', 'application/pdf',
  'application/zip', 'text/plain', 'application/octet-stream']);

// Raw-body upload with progress (fetch has no upload progress; XMLHttpRequest does).
export function uploadAttachment(file, onProgress) {
  return new Promise((resolve, reject) => {
    const xhr = new XMLHttpRequest();
    const type = ALLOWED_TYPES.has(file.type) ? file.type : 'application/octet-stream';
    xhr.open('POST', `${BASE}/attachments${qs({ name: file.name || 'file' })}`);
    xhr.setRequestHeader('Authorization', `Bearer ${getToken()}`);
    xhr.setRequestHeader('Content-Type', type);
    xhr.upload.onprogress = (e) => { if (e.lengthComputable) onProgress(e.loaded / e.total); };
    xhr.onerror = () => reject(new ApiError('network', 'Upload failed: cannot reach the server'));
    xhr.onload = () => {
      let body = null;
      try { body = JSON.parse(xhr.responseText); } catch { /* ignore */ }
      if (xhr.status >= 200 && xhr.status < 300) resolve(body);
      else reject(new ApiError(body?.error?.code || `http_${xhr.status}`, body?.error?.message || `Upload failed (${xhr.status})`, xhr.status));
    };
    xhr.send(file);
  });
}

// Attachments need the Authorization header, so they are fetched as blobs and shown
// through object URLs (img-src allows blob:). Cached per URL for the page's life.
const blobCache = new Map();
export function attachmentBlobUrl(url) {
  if (!blobCache.has(url)) {
    const p = fetch(url, { headers: { Authorization: `Bearer ${getToken()}` } }).then(async (res) => {
      if (!res.ok) throw await errorFrom(res);
      return URL.createObjectURL(await res.blob());
    });
    p.catch(() => blobCache.delete(url));
    blobCache.set(url, p);
  }
  return blobCache.get(url);
}
