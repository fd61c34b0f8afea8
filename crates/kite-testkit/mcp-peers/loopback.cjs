// Preload for Node servers that call listen(port) without a host: bind 127.0.0.1 only.
const net = require('net');
const listen = net.Server.prototype.listen;
net.Server.prototype.listen = function (...a) {
  if (typeof a[0] === 'number' || (typeof a[0] === 'string' && /^\d+$/.test(a[0]))) {
    if (typeof a[1] !== 'string') a.splice(1, 0, '127.0.0.1');
  } else if (a[0] && typeof a[0] === 'object' && a[0].path === undefined && !a[0].host) {
    a[0] = { ...a[0], host: '127.0.0.1' };
  }
  return listen.apply(this, a);
};
