// Records every message a client transport sends (into SENT) and receives
// (into RECEIVED), for the SDK tests' checks of the raw protocol.  The
// transport's onmessage is wrapped however the Client sets it later.
export function recordMessages(transport, sent, received) {
  const send = transport.send.bind(transport);
  transport.send = (message, options) => {
    sent.push(message);
    return send(message, options);
  };
  let handler;
  Object.defineProperty(transport, 'onmessage', {
    configurable: true,
    get: () => handler && ((message, extra) => {
      received.push(message);
      handler(message, extra);
    }),
    set: (h) => { handler = h; },
  });
}
