"""A small user script: evaluate and search with the public API."""
import chess
import chess.engine

import lc0_rocm


def main() -> None:
    with lc0_rocm.load_network("maia-1900", backend="cpu") as net:
        ev: lc0_rocm.Evaluation = net.evaluate(chess.Board())
        best: chess.Move = max(ev.policy, key=lambda m: ev.policy[m])
        wdl: tuple[float, float, float] = ev.wdl
        q: float = ev.q
        evs: list[lc0_rocm.Evaluation] = net.evaluate_batch([chess.Board(), chess.Board()])
        engine = lc0_rocm.Engine(net, MultiPV=2)
        result: lc0_rocm.SearchResult = engine.search(chess.Board(), nodes=10, movetime=0.5)
        move: chess.Move | None = result.best_move
        nps: int = result.nps
        print(best, wdl, q, len(evs), move, nps, result.pv, net.spec, lc0_rocm.__version__)
    try:
        lc0_rocm.load_network("missing-net")
    except lc0_rocm.NetNotFoundError as e:
        print(e)


if __name__ == "__main__":
    main()
