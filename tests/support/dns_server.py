"""A DNS server on 127.0.0.1 (UDP) for the domain proof's tests: queries parsed and answers
made with dnspython's own `dns.message`, so the wire protocol is the real one. TXT records
are set per name; a name in `silent` gets no answer (a timeout), any other unknown name is
NXDOMAIN."""

from __future__ import annotations

import socket
import threading

import dns.flags
import dns.message
import dns.name
import dns.rcode
import dns.rdataclass
import dns.rdatatype
import dns.rrset


class FakeDnsServer:
    """Answers TXT queries from `records` (name -> values); `queries` lists the names asked."""

    def __init__(self) -> None:
        self.records: dict[str, list[str]] = {}
        self.silent: set[str] = set()
        self.queries: list[str] = []
        self._sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        self._sock.bind(("127.0.0.1", 0))
        self._sock.settimeout(0.2)
        self.port = self._sock.getsockname()[1]
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._serve, daemon=True)

    @property
    def address(self) -> str:
        """For `[sso] dns_nameservers`."""
        return f"127.0.0.1:{self.port}"

    def set_txt(self, name: str, *values: str) -> None:
        self.records[name.rstrip(".").lower()] = list(values)

    def start(self) -> FakeDnsServer:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(timeout=5)
        self._sock.close()

    def _serve(self) -> None:
        while not self._stop.is_set():
            try:
                wire, peer = self._sock.recvfrom(4096)
            except TimeoutError:
                continue
            except OSError:
                return
            reply = self._answer(dns.message.from_wire(wire))
            if reply is not None:
                self._sock.sendto(reply.to_wire(), peer)

    def _answer(self, query: dns.message.Message) -> dns.message.Message | None:
        question = query.question[0]
        name = question.name.to_text(omit_final_dot=True).lower()
        self.queries.append(name)
        if name in self.silent:
            return None
        reply = dns.message.make_response(query)
        reply.flags |= dns.flags.AA
        values = self.records.get(name)
        if values is None:
            reply.set_rcode(dns.rcode.NXDOMAIN)
        elif question.rdtype == dns.rdatatype.TXT and values:
            quoted = [f'"{v}"' for v in values]
            rrset = dns.rrset.from_text_list(question.name, 60, "IN", "TXT", quoted)
            reply.answer.append(rrset)
        return reply
