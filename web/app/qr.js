// A ticket's barcode as the gate scans it: the QR image from
// GET /v1/tickets/{id}/qr.svg (it needs the buyer's token, so it is fetched, not
// linked, and shown from a data: URL). A rotating barcode is fetched again while shown.
import { h } from './ui.js';

const ROTATE_MS = 15_000;

async function fetchSvg(ticketId, token) {
  const res = await fetch(`/v1/tickets/${encodeURIComponent(ticketId)}/qr.svg`, {
    headers: { Authorization: `Bearer ${token}` },
    cache: 'no-store',
  });
  if (!res.ok) throw new Error(`status ${res.status}`);
  const svg = await res.text();
  return `data:image/svg+xml;base64,${btoa(svg)}`;
}

/** The barcode of one ticket (`view` from GET /v1/me/tickets). */
export function barcode(view, token) {
  const img = h('img', { class: 'qr', alt: `Barcode for seat ${view.seat}`, width: 160, height: 160 });
  const el = h('figure', { class: 'barcode' }, img, h('figcaption', { class: 'hint' }, view.rotating ? 'Changes every few seconds: show it from this page at the gate.' : 'Show this at the gate.'));
  const load = async () => {
    try {
      img.src = await fetchSvg(view.ticket_id, token);
    } catch {
      el.replaceChildren(h('p', { class: 'hint' }, 'The barcode could not be loaded; reload the page to try again.'));
      return;
    }
    if (view.rotating) {
      setTimeout(() => {
        if (el.isConnected) load();
      }, ROTATE_MS);
    }
  };
  load();
  return el;
}
