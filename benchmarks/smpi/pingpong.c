/* The 8-byte ping-pong of benchmarks/smpi_ratio.py, as SimGrid SMPI runs it.
 *
 * Two ranks bounce an 8-byte message ROUND_TRIPS times with MPI_Send/MPI_Recv (the
 * osu_latency idiom, the same loop benchmarks/mpi_pingpong.py's "Send/Recv" row runs on
 * pyopenib). Rank 0 prints the messages moved and the simulated time, so the Python side
 * can check the run did what it claims before it divides by the wall time.
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    long round_trips = argc > 1 ? atol(argv[1]) : 20000;
    char buf[8] = {0};
    int peer = 1 - rank;
    double t0 = MPI_Wtime();
    for (long i = 0; i < round_trips; i++) {
        if (rank == 0) {
            MPI_Send(buf, 8, MPI_BYTE, peer, 0, MPI_COMM_WORLD);
            MPI_Recv(buf, 8, MPI_BYTE, peer, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        } else {
            MPI_Recv(buf, 8, MPI_BYTE, peer, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            MPI_Send(buf, 8, MPI_BYTE, peer, 0, MPI_COMM_WORLD);
        }
    }
    double elapsed = MPI_Wtime() - t0;
    if (rank == 0)
        printf("messages %ld simulated_s %.9f\n", 2 * round_trips, elapsed);
    MPI_Finalize();
    return 0;
}
