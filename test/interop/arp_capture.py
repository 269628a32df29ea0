"""Prints every ARP packet an interface receives, one JSON line each.

argv[1]: the interface (run inside its namespace). A raw packet socket bound
to the ARP ethertype sees exactly the frames that reach the interface, so a
test can tell a gratuitous ARP (sender and target address equal) from any
other ARP. Prints "ready" once the socket is bound; runs until killed.
"""
import json
import socket
import struct
import sys

ETH_P_ARP = 0x0806
sock = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(ETH_P_ARP))
sock.bind((sys.argv[1], ETH_P_ARP))
print('ready', flush=True)


def mac(b):
    return ':'.join(f'{x:02x}' for x in b)


while True:
    frame = sock.recv(2048)
    arp = frame[14:42]
    if len(arp) < 28:
        continue
    op, = struct.unpack('!H', arp[6:8])
    print(json.dumps({'op': op, 'sha': mac(arp[8:14]), 'spa': socket.inet_ntoa(arp[14:18]),
                      'tha': mac(arp[18:24]), 'tpa': socket.inet_ntoa(arp[24:28])}), flush=True)
