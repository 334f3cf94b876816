"""Creates N persistent MQTT 3.1.1 sessions subscribed to t/# at QoS 1, then
disconnects them, so each later publish is journaled once per session."""
import sys
import threading

import paho.mqtt.client as mqtt

port, n = int(sys.argv[1]), int(sys.argv[2])
for i in range(n):
    done = threading.Event()
    c = mqtt.Client(
        mqtt.CallbackAPIVersion.VERSION2,
        client_id=f"durable-{i}",
        clean_session=False,
        protocol=mqtt.MQTTv311,
    )
    c.on_subscribe = lambda *a: done.set()
    c.connect("127.0.0.1", port)
    c.loop_start()
    c.subscribe("t/#", qos=1)
    if not done.wait(10):
        sys.exit(f"session {i}: no SUBACK")
    c.disconnect()
    c.loop_stop()
